import type { Knex } from 'knex';
import { withStorageErrors } from '../storage-errors.js';
import type { SqlTx } from '../sql-tx.js';

/**
 * The tracker outbox, `tracker_comments` (migration 0041, decision 0028): what a session's terminal transition owes
 * the tracker issue it came from, written in the transition's transaction, and what the sender made of it.
 */
export type Tracker = 'linear' | 'github';
export interface TrackerTarget {
  readonly tracker: Tracker;
  /** Linear: the issue's id (or identifier, `ENG-123`); GitHub: `owner/repo#number`. */
  readonly issue: string;
}

// Looser than github-issue-ref.ts on purpose: a reference stored before that check (say `../..#2`) is still owed, so
// the sender's refusal of it is recorded in the session's detail instead of the comment silently never existing.
const GITHUB_ISSUE = /^([A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100})#([1-9][0-9]{0,9})$/;
const LINEAR_IDENTIFIER = /^[A-Z][A-Z0-9]{0,9}-[1-9][0-9]{0,9}$/;

/**
 * The tracker issue a session came from: a Linear issue delivery keys its session `linear:<org>:<issue id>`, a GitHub
 * one `github:<org>:…` with the issue as `owner/repo#n`; a session dispatched by hand with a tracker issue names it
 * in one of those two shapes. Anything else came from no tracker issue.
 */
export function trackerTargetOf(spec: { trackerSessionId: string; trackerIssue: string | null }): TrackerTarget | null {
  const linear = /^linear:[0-9a-f-]{36}:(.{1,200})$/.exec(spec.trackerSessionId);
  if (linear) return { tracker: 'linear', issue: linear[1]! };
  const issue = spec.trackerIssue;
  if (issue === null) return null;
  if (GITHUB_ISSUE.test(issue)) return { tracker: 'github', issue };
  if (LINEAR_IDENTIFIER.test(issue) && !spec.trackerSessionId.startsWith('github:')) return { tracker: 'linear', issue };
  return null;
}

export interface CommentToOwe {
  readonly id: string;
  readonly orgId: string;
  readonly sessionId: string;
  readonly epoch: number;
  readonly target: TrackerTarget;
  readonly kind: 'terminal' | 'stop';
  readonly sessionStatus: string;
  readonly costUsd: number;
  readonly durationMs: number | null;
  readonly at: Date;
}

/**
 * Owes the comment, in the transition's transaction, if the org is connected to that tracker (an org without the
 * connection gets nothing to fail on). Keyed by the transition: a replay writes nothing more.
 */
export async function oweTrackerComment(tx: SqlTx, c: CommentToOwe): Promise<void> {
  await tx.query(
    `insert into tracker_comments (id, org_id, session_id, epoch, tracker, issue, kind, session_status, cost_usd, duration_ms,
       status, attempts, next_attempt_at, created_at, updated_at)
     select $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', 0, $11, $11, $11
     where exists (select 1 from integration_oauth_connections where org_id = $2 and provider = $5)
     on conflict (id) do nothing`,
    [c.id, c.orgId, c.sessionId, c.epoch, c.target.tracker, c.target.issue, c.kind, c.sessionStatus, c.costUsd, c.durationMs, c.at],
  );
}

export interface OwedComment {
  readonly id: string;
  readonly orgId: string;
  readonly sessionId: string;
  readonly epoch: number;
  readonly tracker: Tracker;
  readonly issue: string;
  /** `agent`: a comment the session's agent wrote (decision 0088), posted as its `body`. */
  readonly kind: 'terminal' | 'stop' | 'agent';
  readonly sessionStatus: string;
  readonly costUsd: number;
  readonly durationMs: number | null;
  readonly attempts: number;
  /** The agent's text for `kind: 'agent'`; null for the comments a session's end owes (composed when sent). */
  readonly body: string | null;
  /** When the transition owed it. */
  readonly createdAt: Date;
}

const toOwed = (r: Record<string, any>): OwedComment => ({
  id: r.id, orgId: r.org_id, sessionId: r.session_id, epoch: Number(r.epoch), tracker: r.tracker, issue: r.issue, kind: r.kind,
  sessionStatus: r.session_status, costUsd: Number(r.cost_usd), durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
  attempts: Number(r.attempts), createdAt: new Date(r.created_at), body: r.body ?? null,
});

/**
 * Claims up to `limit` due comments until `until` (one sender at a time per comment, whichever node), counting the
 * attempt. A sender that dies holding a claim delays that comment to `until`, no more.
 */
export async function claimDueComments(db: Knex, now: Date, until: Date, limit: number): Promise<OwedComment[]> {
  const result = await withStorageErrors(() => db.raw(
    `update tracker_comments set claimed_until = ?, attempts = attempts + 1, updated_at = ?
     where id in (
       select id from tracker_comments
       where status = 'pending' and next_attempt_at <= ? and (claimed_until is null or claimed_until < ?)
       order by next_attempt_at limit ? for update skip locked)
     returning *`,
    [until, now, now, now, limit],
  ));
  return (result.rows as Record<string, any>[]).map(toOwed);
}

export async function commentSent(db: Knex, id: string, url: string | null, at: Date): Promise<void> {
  await db('tracker_comments').where({ id, status: 'pending' })
    .update({ status: 'sent', comment_url: url, sent_at: at, claimed_until: null, last_error: null, updated_at: at });
}

export async function commentRetryLater(db: Knex, id: string, error: string, next: Date, at: Date): Promise<void> {
  await db('tracker_comments').where({ id, status: 'pending' })
    .update({ next_attempt_at: next, claimed_until: null, last_error: error.slice(0, 1000), updated_at: at });
}

/** Not sent yet, for a reason that is no failure (it waits for the run's pull request): the claim's attempt is given back. */
export async function commentPostponed(db: Knex, id: string, next: Date, at: Date): Promise<void> {
  await db('tracker_comments').where({ id, status: 'pending' })
    .update({ next_attempt_at: next, claimed_until: null, attempts: db.raw('greatest(attempts - 1, 0)'), updated_at: at });
}

export async function commentFailed(db: Knex, id: string, error: string, at: Date): Promise<void> {
  await db('tracker_comments').where({ id, status: 'pending' })
    .update({ status: 'failed', claimed_until: null, last_error: error.slice(0, 1000), updated_at: at });
}

export interface TrackerCommentView {
  readonly tracker: Tracker;
  readonly issue: string;
  readonly kind: 'terminal' | 'stop' | 'agent';
  readonly run: number;
  readonly sessionStatus: string;
  readonly status: 'pending' | 'sent' | 'failed';
  readonly attempts: number;
  readonly lastError: string | null;
  readonly url: string | null;
  readonly sentAt: string | null;
  readonly createdAt: string;
}

/** A session's tracker comments, oldest first, for its detail. */
export async function trackerCommentsOf(db: Knex, orgId: string, sessionId: string): Promise<TrackerCommentView[]> {
  const rows = await db('tracker_comments').where({ org_id: orgId, session_id: sessionId }).orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(100);
  return rows.map((r: Record<string, any>) => ({
    tracker: r.tracker, issue: r.issue, kind: r.kind, run: Number(r.epoch), sessionStatus: r.session_status, status: r.status,
    attempts: Number(r.attempts), lastError: r.last_error ?? null, url: r.comment_url ?? null,
    sentAt: r.sent_at ? new Date(r.sent_at).toISOString() : null, createdAt: new Date(r.created_at).toISOString(),
  }));
}
