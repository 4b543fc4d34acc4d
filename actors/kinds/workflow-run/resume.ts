import type { Knex } from 'knex';
import type { Logger } from '../../../ops/kernel/logger.js';
import { activeRunIds } from '../../../storage/workflows/runs.js';
import { workflowRunAddress } from './actor.js';

/** Runs re-awakened per node start; more than this many waiting runs are left to the next start or to their events. */
const RESUME_BATCH = 10_000;

/**
 * After a node starts, every run that was waiting re-issues what it waits on (`run.resume`): timers are re-armed,
 * gates re-opened (learning decisions made meanwhile), dispatches repeated under the same session id. Each
 * message goes to the run's owner through the transport, so in a cluster it reaches the right node; a resume is
 * idempotent, so several nodes starting at once do no harm.
 */
export async function resumeActiveRuns(deps: { db: Knex; log: Logger; tell(address: string, message: unknown): Promise<void> }): Promise<number> {
  const ids = await activeRunIds(deps.db, RESUME_BATCH);
  for (const id of ids) {
    await deps.tell(workflowRunAddress(id), { type: 'run.resume' }).catch((err: unknown) => deps.log.warn({ err, runId: id }, 'could not resume run'));
  }
  if (ids.length > 0) deps.log.info({ runs: ids.length }, 'workflow runs resumed');
  return ids.length;
}
