import type { Knex } from 'knex';
import { trackerCommentsOf } from './tracker-comments.js';
import { sessionOutput } from './output.js';
import { runReportOf } from './run-reports.js';
import { pullRequestOfRun } from './pull-requests.js';

/**
 * Reads of the session read models. Every query is scoped by org (another org's session is simply not found),
 * except the worker-facing ones, which are scoped by the org and projects in the worker's verified token.
 */

export interface SessionSummary {
  readonly id: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly status: string;
  readonly trackerIssue: string | null;
  readonly workerId: string | null;
  readonly costUsd: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string).toISOString());

type Row = Record<string, unknown>;

function toSummary(r: Row): SessionSummary {
  return {
    id: r.public_id as string,
    orgId: r.org_id as string,
    projectId: r.project_id as string,
    status: r.status as string,
    trackerIssue: (r.tracker_issue as string | null) ?? null,
    workerId: (r.worker_id as string | null) ?? null,
    costUsd: Number(r.cost_usd),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

export { findSession, rememberSession, type FoundSession } from './session-names.js';

/** The public id of the session with this key, for what is written about it outside the node (a tracker comment). */
export async function publicIdOfKey(db: Knex, orgId: string, key: string): Promise<string | undefined> {
  const row = await db('sessions').where({ id: key, org_id: orgId }).first('public_id');
  return row ? String(row.public_id) : undefined;
}

/** The public ids of the org's sessions with these keys (a run's steps, an outcome list), key → public id. */
export async function publicIdsOfKeys(db: Knex, orgId: string, keys: readonly string[]): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map();
  const rows = await db('sessions').where({ org_id: orgId }).whereIn('id', [...new Set(keys)]).select('id', 'public_id');
  return new Map(rows.map((r: Row) => [String(r.id), String(r.public_id)]));
}

/** The key of the org's session with this tracker session id, if it has one (index of migration 0037). */
export async function sessionKeyByTracker(db: Knex, orgId: string, trackerSessionId: string): Promise<string | undefined> {
  const row = await db('sessions').where({ org_id: orgId, tracker_session_id: trackerSessionId }).orderBy('created_at').first('id');
  return row ? String(row.id) : undefined;
}

/** Enriched detail for `GET /api/public/sessions/{id}`, of the session with this key. */
export async function sessionDetail(db: Knex, orgId: string, sessionId: string): Promise<Record<string, unknown> | undefined> {
  const row = await db('sessions as s')
    .leftJoin('projects as p', 'p.id', 's.project_id')
    .leftJoin('daemon_workers as w', 'w.id', db.raw('coalesce(s.worker_id, s.last_worker_id)'))
    .where({ 's.id': sessionId, 's.org_id': orgId })
    .first('s.*', 'p.name as project_name', 'p.slug as project_slug', 'w.hostname as worker_hostname', 'w.last_seen_at as worker_last_seen_at');
  if (!row) return undefined;
  const [prompts, newestActivities, output, trackerComments, report, pullRequest] = await Promise.all([
    db('session_prompts').where({ session_id: sessionId, org_id: orgId }).orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(200),
    // The newest ones: an agent's tool steps may be many, and must not hide how the session ended.
    db('session_activities').where({ session_id: sessionId, org_id: orgId })
      .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(200),
    sessionOutput(db, orgId, sessionId, Number(row.epoch)),
    trackerCommentsOf(db, orgId, sessionId),
    runReportOf(db, orgId, sessionId, Number(row.epoch)),
    pullRequestOfRun(db, orgId, sessionId, Number(row.epoch)),
  ]);
  const activities = newestActivities.reverse();
  const workerId = (row.worker_id ?? row.last_worker_id) as string | null;
  const workflowRun = await workflowRunOf(db, orgId, row.requested_by as string | null);
  return {
    id: row.public_id,
    status: row.status,
    orgId: row.org_id,
    project: { id: row.project_id, name: row.project_name ?? null, slug: row.project_slug ?? null },
    worker: workerId === null ? null : {
      id: workerId, hostname: row.worker_hostname ?? null, lastSeenAt: iso(row.worker_last_seen_at), holdsClaim: row.worker_id !== null,
    },
    trackerSessionId: row.tracker_session_id,
    trackerIssue: row.tracker_issue,
    waitingForIssueLock: row.lock_state === 'waiting',
    prompt: row.prompt,
    agentCardId: row.agent_card_id,
    workType: row.work_type,
    provider: row.provider,
    /** The repository the session runs on, as dispatched, and the ref it starts from (decision 0075). */
    repository: row.repository_id === null ? null : {
      id: row.repository_id, url: row.repository_url, name: row.repository_name, defaultBranch: row.repository_default_branch,
    },
    ref: row.ref ?? null,
    /** Offered before lower priorities, and the key its concurrency is limited by (decision 0081). */
    priority: row.priority,
    concurrencyKey: row.concurrency_key ?? null,
    phase: row.phase,
    error: row.error,
    costUsd: Number(row.cost_usd),
    run: row.epoch,
    requestedBy: row.requested_by,
    /** The workflow version this session runs under, when a workflow run's agent step dispatched it (issue 3.3). */
    workflowRun,
    prompts: prompts.map((p: Row) => ({
      id: p.id, text: p.text, run: p.epoch, queued: p.queued, createdAt: iso(p.created_at),
      deliveredAt: iso(p.delivered_at), archivedAt: iso(p.archived_at),
    })),
    activities: activities.map((a: Row) => ({ id: a.id, kind: a.kind, body: a.body, createdAt: iso(a.created_at) })),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    claimedAt: iso(row.claimed_at),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    lastToolCalledAt: iso(row.last_tool_called_at),
    /** The last 64 KiB of the current run's agent output (decision 0022); null until the agent prints. */
    output,
    /** What each end of the session owed its tracker issue, and whether it was posted (decision 0028). */
    trackerComments,
    /** The current run's agent, usage and workspace as its worker reported them, and its pull request (decision 0076). */
    ...report,
    pullRequest: pullRequest?.status === 'opened' ? { number: pullRequest.number, url: pullRequest.url } : null,
    pullRequestDelivery: pullRequest === null ? null : {
      status: pullRequest.status, repository: pullRequest.repository, head: pullRequest.head, base: pullRequest.base,
      attempts: pullRequest.attempts, lastError: pullRequest.lastError,
    },
  };
}

/**
 * The run (and so the pinned workflow version) behind a session a workflow run dispatched: its `requestedBy` is
 * `workflow-run:<runId>` (actors/kinds/workflow-run/ports.ts). Scoped by org like every other read.
 */
async function workflowRunOf(db: Knex, orgId: string, requestedBy: string | null): Promise<{ runId: string; workflowId: string; version: number } | null> {
  const prefix = 'workflow-run:';
  if (requestedBy === null || !requestedBy.startsWith(prefix)) return null;
  const runId = requestedBy.slice(prefix.length);
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(runId)) return null;
  const run = await db('workflow_runs').where({ id: runId, org_id: orgId }).first('workflow_id', 'version');
  return run ? { runId, workflowId: run.workflow_id as string, version: Number(run.version) } : null;
}

export const MAX_SESSIONS_PER_ISSUE = 100;

export async function sessionsByTrackerIssue(db: Knex, orgId: string, trackerIssue: string): Promise<SessionSummary[]> {
  const rows = await db('sessions').where({ org_id: orgId, tracker_issue: trackerIssue })
    .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id' }]).limit(MAX_SESSIONS_PER_ISSUE);
  return rows.map(toSummary);
}

// What a poll offers a worker: ./offers.ts.

/**
 * Sessions held by a worker that has not been seen since `staleBefore` (or is not registered at all), for the
 * lease sweeper. Bounded per sweep.
 */
export async function sessionsWithExpiredLease(db: Knex, staleBefore: number, limit: number): Promise<{ id: string; workerId: string }[]> {
  const rows = await db('sessions as s')
    .leftJoin('daemon_workers as w', 'w.id', 's.worker_id')
    .whereIn('s.status', ['claimed', 'running', 'paused', 'finalizing'])
    .whereNotNull('s.worker_id')
    .where((q) => q.whereNull('w.id').orWhere('w.last_seen_at', '<', new Date(staleBefore)))
    .orderBy('s.updated_at')
    .limit(limit)
    .select('s.id', 's.worker_id');
  return rows.map((r: Row) => ({ id: r.id as string, workerId: r.worker_id as string }));
}

/**
 * Step heartbeats, coalesced: one UPDATE per batch, scoped so a worker only touches sessions it holds. A beat names
 * its session as the worker does, by public id (or an older session's key); the worker's own claims narrow it first.
 */
export async function writeStepHeartbeats(
  db: Knex, batch: readonly { sessionId: string; orgId: string; workerId: string; at: number }[],
): Promise<void> {
  if (batch.length === 0) return;
  const sorted = [...batch].sort((a, b) => (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0));
  await db.raw(
    `update sessions s set last_tool_called_at = v.at
       from (select * from unnest(?::text[], ?::uuid[], ?::text[], ?::timestamptz[]) as t(id, org_id, worker_id, at)) v
      where s.worker_id = v.worker_id and s.org_id = v.org_id and (s.public_id = v.id or s.id = v.id)
        and (s.last_tool_called_at is null or s.last_tool_called_at < v.at)`,
    [sorted.map((b) => b.sessionId), sorted.map((b) => b.orgId), sorted.map((b) => b.workerId), sorted.map((b) => new Date(b.at).toISOString())],
  );
}
