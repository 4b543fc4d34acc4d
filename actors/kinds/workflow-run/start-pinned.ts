import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { findVersion } from '../../../storage/workflows/workflows.js';
import { analyseDefinition } from '../workflow/definition.js';
import { workflowRunAddress } from './actor.js';
import type { RunMsg, RunTrigger } from './machine.js';
import type { AskFn } from './ports.js';

/** A run a trigger starts: which version, under which derived id, with what input. */
export interface PinnedRunStart {
  readonly orgId: string;
  readonly projectId: string;
  readonly workflowId: string;
  readonly version: number;
  /** Derived from what triggered it (a fire, a delivery), so a retry names the same run. */
  readonly runId: string;
  readonly input: Record<string, unknown>;
  readonly startedBy: string;
  readonly trigger: RunTrigger;
}

export type PinnedRunOutcome = { readonly started: true } | { readonly started: false; readonly detail: string };

/**
 * Starts a run of one workflow version under a derived id (schedules and webhook triggers, decision 0027). The
 * version's definition is read and compiled here, as `POST /runs` does, so the run is pinned to it. Deterministic
 * failures (the version is gone, its definition no longer compiles) are outcomes; transient ones throw, and the
 * caller retries the same start. A start that finds the run already there (a retry after a crash) counts as started.
 */
export async function startPinnedRun(deps: { readonly db: Knex; readonly ask: AskFn }, start: PinnedRunStart): Promise<PinnedRunOutcome> {
  const version = await findVersion(deps.db, start.orgId, start.workflowId, start.version);
  if (!version) return { started: false, detail: `version ${start.version} of the workflow is missing` };
  let plan;
  try {
    plan = analyseDefinition(version.definitionYaml).plan;
  } catch (err) {
    return { started: false, detail: `version ${start.version} does not compile: ${(err as Error).message}` };
  }
  const message: RunMsg = {
    type: 'run.start', orgId: start.orgId, projectId: start.projectId, workflowId: start.workflowId, version: start.version, plan,
    input: start.input, startedBy: start.startedBy, trigger: start.trigger,
  };
  try {
    await deps.ask(workflowRunAddress(start.runId), message);
  } catch (err) {
    if (!(err instanceof TroupeError && err.code === 'ALREADY_EXISTS')) throw err;
  }
  return { started: true };
}

/** A UUID-shaped run id derived from what triggered the run. */
export function derivedRunId(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
