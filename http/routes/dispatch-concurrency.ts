import type { Knex } from 'knex';
import type { Deps } from '../../actors/services/deps.js';
import { sessionAddress, type SessionReply } from '../../actors/kinds/session/index.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { DEFAULT_PRIORITY, type SessionRepository } from '../../schemas/sessions/session-state.js';
import { defaultConcurrencyKey } from '../../schemas/queue-control/concurrency.js';
import { holdersUnderKey, liveUnderKey, projectConcurrency } from '../../storage/queue-control/concurrency.js';

/**
 * What a dispatch says about its place in the queue (issue 36, decision 0081): its priority and the key its project's
 * concurrency limit counts it under, and what a limit does at dispatch: `cancel-newest` refuses it, `cancel-in-progress`
 * stops the sessions holding the key once the new one is queued. `queue` is decided by the poll
 * (storage/sessions/offers.ts), not here: the session is created and waits.
 */
export interface DispatchQueueing {
  readonly priority: number;
  readonly concurrencyKey: string | null;
  /** Under `cancel-in-progress`, the limit whose holders a new session supersedes; null otherwise. */
  readonly supersedeAbove: number | null;
}

/** Who the server's superseding stop is recorded as, and the reason the session detail shows. */
export const SUPERSEDER = 'system:concurrency';
export const SUPERSEDED = 'superseded';

export async function queueingOfDispatch(
  db: Knex, orgId: string, sessionKey: string,
  body: { readonly projectId: string; readonly priority?: number | undefined; readonly concurrencyKey?: string | undefined; readonly trackerIssue?: string | undefined },
  repository: SessionRepository | null, ref: string | null,
): Promise<DispatchQueueing> {
  const concurrencyKey = body.concurrencyKey ?? defaultConcurrencyKey(repository, ref, body.trackerIssue ?? null);
  const queueing = { priority: body.priority ?? DEFAULT_PRIORITY, concurrencyKey, supersedeAbove: null };
  if (concurrencyKey === null) return queueing;
  const setting = await projectConcurrency(db, orgId, body.projectId);
  if (setting === null || setting.strategy === 'queue') return queueing;
  // A retried dispatch of a session that exists answers that session; it is not a newer one to refuse or to run.
  if (await db('sessions').where({ id: sessionKey, org_id: orgId }).first('id') !== undefined) return queueing;
  if (setting.strategy === 'cancel-in-progress') return { ...queueing, supersedeAbove: setting.defaultLimit };
  // Pending ones count too: each of them will hold a place, so a new one past the limit would only wait to be refused.
  const live = await liveUnderKey(db, orgId, concurrencyKey);
  if (live >= setting.defaultLimit) {
    throw new TroupeError('CONCURRENCY_LIMIT', `the key already has ${live} session(s) at the project's limit of ${setting.defaultLimit}`, {
      field: 'concurrencyKey', concurrencyKey,
    });
  }
  return queueing;
}

/**
 * After a `cancel-in-progress` dispatch queued its session: the oldest holders of the key are stopped through the
 * ordinary stop (each worker gets its stop signal and ends its agent) until the new one has a place, each stop's reason
 * recorded as `superseded` and audited. The stopped session's end tells the workers to poll, so the new one is
 * claimed at once. A holder that ended meanwhile answers `stopped: false` and is left as it ended.
 */
export async function supersedeHolders(deps: Deps, orgId: string, queueing: DispatchQueueing, by: string): Promise<void> {
  if (queueing.supersedeAbove === null || queueing.concurrencyKey === null) return;
  const holders = await holdersUnderKey(deps.db, orgId, queueing.concurrencyKey);
  const over = holders.length - queueing.supersedeAbove + 1;
  for (const holder of holders.slice(0, Math.max(0, over))) {
    // The machine records the reason and the audit entry with the stop; one that ended meanwhile is left as it ended.
    await deps.ask<SessionReply>(sessionAddress(holder.key), {
      type: 'session.stop', requestedBy: SUPERSEDER, reason: SUPERSEDED, details: { concurrencyKey: queueing.concurrencyKey, supersededBy: by },
    });
  }
}
