import type { Deps } from '../deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { findRun } from '../../storage/workflows/runs.js';
import { findVersion } from '../../storage/workflows/workflows.js';
import { analyseDefinition } from '../workflow/definition.js';
import { workflowRunAddress } from '../workflow-run/actor.js';
import type { RunMsg } from '../workflow-run/machine.js';
import type { StartRunEffect, StartRunOutcome } from './actor.js';

/** Run statuses in which a run is still live (actors/workflow-run/machine.ts). */
const LIVE_RUN_STATUSES: ReadonlySet<string> = new Set(['running', 'waiting', 'suspended']);

/** Recorded as the run's `startedBy`. */
export const scheduleRequester = (workflowId: string): string => `schedule:${workflowId}`;

/**
 * Starts the run of one fire: the version the schedule pinned at the fire, its input `{fireTime}`, under the run id
 * derived from the fire. With `overlap: skip` and the schedule's previous run still live, the fire is skipped
 * instead. Deterministic failures (the version is gone, its definition no longer compiles) are outcomes; transient
 * ones throw, and the schedule retries the same start on its next tick. A start that finds the run already exists
 * (a retry after a crash) counts as started.
 */
export async function startScheduledRun(
  deps: Pick<Deps, 'db' | 'ask'>, workflowId: string, effect: StartRunEffect,
): Promise<StartRunOutcome> {
  const { fire, orgId } = effect;
  if (effect.overlap === 'skip' && effect.lastRunId !== null) {
    const previous = await findRun(deps.db, orgId, effect.lastRunId);
    if (previous && LIVE_RUN_STATUSES.has(previous.status)) {
      return { outcome: 'skipped-overlap', detail: `the previous run ${previous.id} is still ${previous.status}` };
    }
  }
  const version = await findVersion(deps.db, orgId, workflowId, fire.version);
  if (!version) return { outcome: 'failed', detail: `version ${fire.version} of the workflow is missing` };
  let plan;
  try {
    plan = analyseDefinition(version.definitionYaml).plan;
  } catch (err) {
    return { outcome: 'failed', detail: `version ${fire.version} does not compile: ${(err as Error).message}` };
  }
  const fireTime = new Date(fire.fireTime).toISOString();
  const start: RunMsg = {
    type: 'run.start', orgId, projectId: effect.projectId, workflowId, version: fire.version, plan,
    input: { fireTime }, startedBy: scheduleRequester(workflowId), trigger: { kind: 'schedule', fireTime },
  };
  try {
    await deps.ask(workflowRunAddress(fire.runId), start);
  } catch (err) {
    if (!(err instanceof TroupeError && err.code === 'ALREADY_EXISTS')) throw err;
  }
  return { outcome: 'started' };
}
