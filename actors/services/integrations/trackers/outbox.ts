import { Counter, type Registry } from 'prom-client';
import { nextAttemptAt } from '../outbox-retries.js';
import type { Deps } from '../../deps.js';
import { PeriodicPass } from '../../periodic-pass.js';
import { registeredMetric } from '../../../../ops/kernel/registered-metric.js';
import { sessionOutput } from '../../../../storage/sessions/output.js';
import { publicIdOfKey } from '../../../../storage/sessions/queries.js';
import {
  claimDueComments, commentFailed, commentPostponed, commentRetryLater, commentSent, type OwedComment,
} from '../../../../storage/sessions/tracker-comments.js';
import { pullRequestLinkFor } from '../pull-requests/comment-link.js';
import { ConnectionUnusable, withConnectionToken } from '../oauth/connection-token.js';
import { commentBody } from './comment-body.js';
import { DEFAULT_TRACKER_API_URLS, postTrackerComment, type TrackerAnswer } from './post-comment.js';

/**
 * The tracker outbox's sender (decision 0028), `deps.services.trackerOutbox`: every poll it claims the comments due
 * (any node may; a claim holds one for CLAIM_MS), posts each through the org's OAuth connection (a 401 refreshes the
 * token once, decision 0018), and records the outcome: sent; refused for good on a 4xx, a missing connection or one
 * that needs re-authorizing; otherwise tried again after a backoff that doubles from
 * `TROUPE_TRACKER_RETRY_BASE_MS`, until the eighth attempt (outbox-retries.ts). The transition that owed the comment never waits for any of
 * it. Outcomes are counted in `troupe_tracker_comments_total{tracker, outcome}` and shown in the session detail.
 */
const CLAIM_MS = 60_000;
const BATCH = 20;

type Outcome = 'sent' | 'failed' | 'retry' | 'postponed';
/** How soon a comment waiting for its run's pull request looks again. */
const POSTPONE_MAX_MS = 5_000;

export class TrackerOutbox extends PeriodicPass {
  constructor() {
    super('tracker-outbox', (deps) => sendDueComments(deps, outcomesCounter(deps.metrics)), (deps) => deps.config.trackerPollMs);
  }
}

function outcomesCounter(registry: Registry): Counter<'tracker' | 'outcome'> {
  return registeredMetric(registry, 'troupe_tracker_comments_total', () => new Counter({
    name: 'troupe_tracker_comments_total',
    help: 'Tracker comment attempts by outcome: sent, failed (given up), retry (tried again later), postponed (waits for its pull request)',
    labelNames: ['tracker', 'outcome'] as const,
    registers: [registry],
  }));
}

/** One pass: claims what is due and sends it. Returns how many it handled. */
export async function sendDueComments(deps: Deps, counter = outcomesCounter(deps.metrics)): Promise<number> {
  const now = deps.clock.now();
  const due = await claimDueComments(deps.db, new Date(now), new Date(now + CLAIM_MS), BATCH);
  for (const comment of due) {
    const outcome = await sendOne(deps, comment).catch(async (err: unknown) => {
      deps.log.warn({ err, commentId: comment.id }, 'a tracker comment could not be sent');
      return retryOrGiveUp(deps, comment, 'internal error while sending');
    });
    counter.inc({ tracker: comment.tracker, outcome });
  }
  return due.length;
}

async function sendOne(deps: Deps, c: OwedComment): Promise<Outcome> {
  // A completed run's comment links the pull request it opened (decision 0076), so it waits while one is on its way.
  const link = c.kind === 'terminal' && c.sessionStatus === 'completed'
    ? await pullRequestLinkFor(deps.db, c, deps.clock.now())
    : { wait: false as const, pullRequest: null };
  if (link.wait) {
    const now = deps.clock.now();
    await commentPostponed(deps.db, c.id, new Date(now + Math.min(deps.config.trackerRetryBaseMs, POSTPONE_MAX_MS)), new Date(now));
    return 'postponed';
  }
  // An agent's own comment (decision 0088) is posted as it wrote it; a session's end is composed now.
  const body = c.kind === 'agent' ? c.body ?? '' : await endCommentBody(deps, c, link.pullRequest);
  const apiUrl = (c.tracker === 'linear' ? deps.config.linearApiUrl : deps.config.githubApiUrl) ?? DEFAULT_TRACKER_API_URLS[c.tracker];
  let answer: TrackerAnswer;
  try {
    const used = await withConnectionToken(deps, c.orgId, c.tracker, (token) => postTrackerComment(deps.services.outbound, apiUrl, c.tracker, c.issue, body, token));
    if (!used.connected) return giveUp(deps, c, `the org has no ${c.tracker} connection`);
    answer = used.value;
  } catch (err) {
    if (err instanceof ConnectionUnusable) {
      return err.reason === 'unreachable'
        ? retryOrGiveUp(deps, c, `${c.tracker} token endpoint unreachable`)
        : giveUp(deps, c, `the ${c.tracker} connection is ${err.reason}`);
    }
    throw err;
  }
  const at = new Date(deps.clock.now());
  switch (answer.kind) {
    case 'posted':
      await commentSent(deps.db, c.id, answer.url, at);
      return 'sent';
    case 'refused':
      return giveUp(deps, c, answer.reason);
    case 'unavailable':
      return retryOrGiveUp(deps, c, answer.reason);
  }
}

/** The comment a session's end owes (decision 0028): its facts, output tail and link, read when it is sent. */
async function endCommentBody(deps: Deps, c: OwedComment, pullRequest: { readonly number: number; readonly url: string } | null): Promise<string> {
  const output = await sessionOutput(deps.db, c.orgId, c.sessionId, c.epoch);
  // The comment names the session as people and the console know it: its public id.
  const shown = (await publicIdOfKey(deps.db, c.orgId, c.sessionId)) ?? c.sessionId;
  return commentBody({
    kind: c.kind === 'stop' ? 'stop' : 'terminal', sessionId: shown, sessionStatus: c.sessionStatus, durationMs: c.durationMs, costUsd: c.costUsd,
    output: output?.tail ?? null, link: deps.config.publicUrl ? `${deps.config.publicUrl}/sessions/${shown}` : null,
    pullRequest,
  });
}

async function giveUp(deps: Deps, c: OwedComment, reason: string): Promise<Outcome> {
  deps.log.warn({ commentId: c.id, tracker: c.tracker, reason }, 'a tracker comment was not posted');
  await commentFailed(deps.db, c.id, reason, new Date(deps.clock.now()));
  return 'failed';
}

async function retryOrGiveUp(deps: Deps, c: OwedComment, reason: string): Promise<Outcome> {
  const now = deps.clock.now();
  const dueAt = nextAttemptAt(c.attempts, deps.config.trackerRetryBaseMs, now);
  if (dueAt === undefined) return giveUp(deps, c, `${reason} (after ${c.attempts} attempts)`);
  await commentRetryLater(deps.db, c.id, reason, new Date(dueAt), new Date(now));
  return 'retry';
}
