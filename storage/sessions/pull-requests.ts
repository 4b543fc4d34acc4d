import type { Knex } from 'knex';
import { withStorageErrors } from '../storage-errors.js';

/**
 * The pull-request outbox, `session_pull_requests` (migration 0049, decision 0076): what a completed run whose
 * workspace pushed commits owes the GitHub repository it worked on, and what the sender made of it.
 */
export type PullRequestStatus = 'pending' | 'opened' | 'failed' | 'skipped';

export interface PullRequestToOwe {
  readonly orgId: string;
  readonly sessionId: string;
  readonly epoch: number;
  readonly repository: string | null;
  readonly head: string | null;
  readonly base: string | null;
  readonly title: string | null;
  readonly body: string | null;
  /** Null: owed (`pending`). A reason: no pull request applies (`skipped`), recorded so the detail can say why. */
  readonly skippedBecause: string | null;
  readonly at: Date;
}

/** One row per run: a replay (a retried `completed`) writes nothing more. */
export const pullRequestKey = (sessionId: string, epoch: number): string => `${sessionId}:${epoch}:pull-request`;

export async function owePullRequest(db: Knex, p: PullRequestToOwe): Promise<void> {
  await db('session_pull_requests').insert({
    id: pullRequestKey(p.sessionId, p.epoch), org_id: p.orgId, session_id: p.sessionId, epoch: p.epoch,
    status: p.skippedBecause === null ? 'pending' : 'skipped', repository: p.repository, head: p.head, base: p.base,
    title: p.title, body: p.body, attempts: 0, last_error: p.skippedBecause, next_attempt_at: p.at, created_at: p.at, updated_at: p.at,
  }).onConflict('id').ignore();
}

export interface OwedPullRequest {
  readonly id: string;
  readonly orgId: string;
  readonly sessionId: string;
  readonly epoch: number;
  /** `owner/repo`. */
  readonly repository: string;
  readonly head: string;
  readonly base: string;
  readonly title: string;
  readonly body: string;
  readonly attempts: number;
}

const toOwed = (r: Record<string, any>): OwedPullRequest => ({
  id: r.id, orgId: r.org_id, sessionId: r.session_id, epoch: Number(r.epoch), repository: r.repository, head: r.head,
  base: r.base, title: r.title, body: r.body, attempts: Number(r.attempts),
});

/**
 * Claims up to `limit` due pull requests until `until` (one sender at a time per row, whichever node), counting the
 * attempt. A sender that dies holding a claim delays that pull request to `until`, no more.
 */
export async function claimDuePullRequests(db: Knex, now: Date, until: Date, limit: number): Promise<OwedPullRequest[]> {
  const result = await withStorageErrors(() => db.raw(
    `update session_pull_requests set claimed_until = ?, attempts = attempts + 1, updated_at = ?
     where id in (
       select id from session_pull_requests
       where status = 'pending' and next_attempt_at <= ? and (claimed_until is null or claimed_until < ?)
       order by next_attempt_at limit ? for update skip locked)
     returning *`,
    [until, now, now, now, limit],
  ));
  return (result.rows as Record<string, any>[]).map(toOwed);
}

export async function pullRequestOpened(db: Knex, id: string, number: number, url: string, at: Date): Promise<void> {
  await db('session_pull_requests').where({ id, status: 'pending' })
    .update({ status: 'opened', number, url, opened_at: at, claimed_until: null, last_error: null, updated_at: at });
}

export async function pullRequestRetryLater(db: Knex, id: string, error: string, next: Date, at: Date): Promise<void> {
  await db('session_pull_requests').where({ id, status: 'pending' })
    .update({ next_attempt_at: next, claimed_until: null, last_error: error.slice(0, 1000), updated_at: at });
}

export async function pullRequestFailed(db: Knex, id: string, error: string, at: Date): Promise<void> {
  await db('session_pull_requests').where({ id, status: 'pending' })
    .update({ status: 'failed', claimed_until: null, last_error: error.slice(0, 1000), updated_at: at });
}

export interface PullRequestView {
  readonly status: PullRequestStatus;
  readonly repository: string | null;
  readonly head: string | null;
  readonly base: string | null;
  readonly attempts: number;
  readonly lastError: string | null;
  readonly number: number | null;
  readonly url: string | null;
}

/** The pull request a run of the session owes or opened, if any; scoped by org like every read. */
export async function pullRequestOfRun(db: Knex, orgId: string, sessionId: string, epoch: number): Promise<PullRequestView | null> {
  const r = await db('session_pull_requests').where({ org_id: orgId, session_id: sessionId, epoch }).first();
  if (!r) return null;
  return {
    status: r.status, repository: r.repository ?? null, head: r.head ?? null, base: r.base ?? null, attempts: Number(r.attempts),
    lastError: r.last_error ?? null, number: r.number === null ? null : Number(r.number), url: r.url ?? null,
  };
}

/** What a completed run's pull request is made from: the session as it ended, and the repository it ran on. */
export interface CompletedRun {
  readonly publicId: string;
  readonly projectId: string;
  readonly epoch: number;
  readonly prompt: string;
  readonly costUsd: number;
  /** The repository copied onto the session at dispatch (migration 0048); null when it was dispatched with none. */
  readonly repository: Repository | null;
  /** The branch, tag or commit the session started from, as dispatched. */
  readonly ref: string | null;
}

export interface Repository { readonly url: string; readonly defaultBranch: string }

/** The session's current run if it is `completed`; undefined otherwise (re-dispatched since, or another org's). */
export async function completedRunOf(db: Knex, orgId: string, sessionKey: string): Promise<CompletedRun | undefined> {
  const row = await db('sessions').where({ id: sessionKey, org_id: orgId, status: 'completed' })
    .first('public_id', 'project_id', 'epoch', 'prompt', 'cost_usd', 'repository_url', 'repository_default_branch', 'ref');
  if (!row) return undefined;
  return {
    publicId: String(row.public_id), projectId: String(row.project_id), epoch: Number(row.epoch), prompt: String(row.prompt),
    costUsd: Number(row.cost_usd), ref: row.ref ?? null,
    repository: row.repository_url ? { url: String(row.repository_url), defaultBranch: String(row.repository_default_branch) } : null,
  };
}

/** A repository registered with the project, by id; scoped by org and project, so a report cannot name another's. */
export async function projectRepositoryOf(db: Knex, orgId: string, projectId: string, id: string): Promise<Repository | undefined> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return undefined;
  const row = await db('project_repositories').where({ id, org_id: orgId, project_id: projectId }).first('url', 'default_branch');
  return row ? { url: String(row.url), defaultBranch: String(row.default_branch) } : undefined;
}
