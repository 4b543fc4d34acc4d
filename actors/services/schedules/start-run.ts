import type { Deps } from '../deps.js';
import { findRun } from '../../../storage/workflows/runs.js';
import { startPinnedRun } from '../../kinds/workflow-run/start-pinned.js';
import { triggerBudgetRefusal } from '../identity/request-limits.js';
import type { StartRunEffect, StartRunOutcome } from '../../kinds/workflow-schedule/actor.js';

/** Run statuses in which a run is still live (actors/kinds/workflow-run/machine.ts). */
const LIVE_RUN_STATUSES: ReadonlySet<string> = new Set(['running', 'waiting', 'suspended']);

/** Recorded as the run's `startedBy`. */
export const scheduleRequester = (workflowId: string): string => `schedule:${workflowId}`;

/**
 * Starts the run of one fire: the version the schedule pinned at the fire, its input `{fireTime}`, under the run id
 * derived from the fire (startPinnedRun). With `overlap: skip` and the schedule's previous run still live, the fire
 * is skipped instead. A transient failure throws, and the schedule retries the same start on its next tick.
 */
export async function startScheduledRun(
  deps: Pick<Deps, 'db' | 'ask' | 'services'>, workflowId: string, effect: StartRunEffect,
): Promise<StartRunOutcome> {
  const { fire, orgId } = effect;
  if (effect.overlap === 'skip' && effect.lastRunId !== null) {
    const previous = await findRun(deps.db, orgId, effect.lastRunId);
    if (previous && LIVE_RUN_STATUSES.has(previous.status)) {
      return { outcome: 'skipped-overlap', detail: `the previous run ${previous.id} is still ${previous.status}` };
    }
  }
  // Triggered starts count against the org's dispatch budget like manual ones (issue 30); over it the fire is recorded
  // as failed, with the reason, rather than retried.
  const overBudget = await triggerBudgetRefusal(deps.services.rateLimits, orgId, 1);
  if (overBudget !== undefined) return { outcome: 'failed', detail: overBudget };
  const fireTime = new Date(fire.fireTime).toISOString();
  const started = await startPinnedRun(deps, {
    orgId, projectId: effect.projectId, workflowId, version: fire.version, runId: fire.runId,
    input: { fireTime }, startedBy: scheduleRequester(workflowId), trigger: { kind: 'schedule', fireTime },
  });
  return started.started ? { outcome: 'started' } : { outcome: 'failed', detail: started.detail };
}
