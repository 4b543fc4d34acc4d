import type { Knex } from 'knex';
import { withStorageErrors } from '../storage-errors.js';

/**
 * What the agent of a session does on its line to the team (`troupe mcp`, decision 0088): the approvals and tool
 * permissions it asked for (`session_agent_requests`, migration 0056; the decision itself is the approval gate's),
 * the progress it reports (session activities of kind `agent.progress`) and the tracker comments it writes (the
 * tracker outbox, `kind = 'agent'`). Every read and write is scoped by org.
 */

/** The run of a session as the agent line checks it on every call: the token acts only while this run is live. */
export interface SessionRun {
  readonly key: string;
  readonly publicId: string;
  readonly projectId: string;
  readonly status: string;
  readonly epoch: number;
  readonly workerId: string | null;
  readonly trackerSessionId: string;
  readonly trackerIssue: string | null;
}

export async function sessionRun(db: Knex, orgId: string, key: string): Promise<SessionRun | undefined> {
  const r = await withStorageErrors(() => db('sessions').where({ org_id: orgId, id: key })
    .first('id', 'public_id', 'project_id', 'status', 'epoch', 'worker_id', 'tracker_session_id', 'tracker_issue'));
  return r ? {
    key: String(r.id), publicId: String(r.public_id), projectId: String(r.project_id), status: String(r.status), epoch: Number(r.epoch),
    workerId: r.worker_id ?? null, trackerSessionId: String(r.tracker_session_id), trackerIssue: r.tracker_issue ?? null,
  } : undefined;
}

export type AgentRequestKind = 'approval' | 'tool';

export interface AgentRequest {
  readonly gateId: string;
  readonly orgId: string;
  readonly sessionKey: string;
  readonly epoch: number;
  readonly kind: AgentRequestKind;
  readonly summary: string;
  readonly details: string | null;
  readonly toolName: string | null;
  readonly toolInput: unknown;
  readonly createdAt: Date;
}

export async function recordAgentRequest(db: Knex, r: AgentRequest): Promise<void> {
  await withStorageErrors(() => db('session_agent_requests').insert({
    gate_id: r.gateId, org_id: r.orgId, session_id: r.sessionKey, epoch: r.epoch, kind: r.kind, summary: r.summary,
    details: r.details, tool_name: r.toolName, tool_input: r.toolInput === null ? null : JSON.stringify(r.toolInput), created_at: r.createdAt,
  }));
}

const toRequest = (r: Record<string, any>): AgentRequest => ({
  gateId: r.gate_id, orgId: r.org_id, sessionKey: r.session_id, epoch: Number(r.epoch), kind: r.kind, summary: r.summary,
  details: r.details ?? null, toolName: r.tool_name ?? null, toolInput: r.tool_input ?? null, createdAt: new Date(r.created_at),
});

export async function findAgentRequest(db: Knex, orgId: string, gateId: string): Promise<AgentRequest | undefined> {
  const r = await withStorageErrors(() => db('session_agent_requests').where({ org_id: orgId, gate_id: gateId }).first());
  return r ? toRequest(r) : undefined;
}

/** How many of the run's requests a person has not decided yet (their gates still pending). */
export async function undecidedRequests(db: Knex, orgId: string, sessionKey: string, epoch: number): Promise<number> {
  // A request whose gate is not written yet (its open is in flight) is undecided too.
  const r = await withStorageErrors(() => db('session_agent_requests as r')
    .leftJoin('approval_gates as g', function joinGate() { this.on('g.id', 'r.gate_id').andOn('g.org_id', 'r.org_id'); })
    .where({ 'r.org_id': orgId, 'r.session_id': sessionKey, 'r.epoch': epoch })
    .andWhere((q) => { void q.whereNull('g.status').orWhere('g.status', 'pending'); })
    .count<{ n: string }[]>('* as n'));
  return Number(r[0]?.n ?? 0);
}

/**
 * Records a request unless its run already has `max` undecided: counted and written under a lock on the run, so
 * requests sent at once cannot all pass the count (a review of issue 35 §3). False when the run is full.
 */
export async function recordAgentRequestWithin(db: Knex, r: AgentRequest, max: number): Promise<'recorded' | 'exists' | 'full'> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 13))', [`${r.orgId}:${r.sessionKey}:${r.epoch}`]);
    // A retried request (the same key, so the same gate id) is the one already recorded, whatever the count.
    if (await trx('session_agent_requests').where({ gate_id: r.gateId, org_id: r.orgId, session_id: r.sessionKey, epoch: r.epoch }).first('gate_id')) return 'exists';
    if ((await undecidedRequests(trx, r.orgId, r.sessionKey, r.epoch)) >= max) return 'full';
    await recordAgentRequest(trx, r);
    return 'recorded';
  });
}

/**
 * A progress report, as an activity of the session's current run (its timeline). Keyed by the caller's key within
 * the run, so a retried call adds nothing twice. False when the run is no longer the live one.
 */
export async function appendProgress(
  db: Knex, orgId: string, sessionKey: string, epoch: number, key: string, body: string, at: Date, maxPerRun: number,
): Promise<{ live: boolean; inserted: boolean; full: boolean }> {
  const result = await withStorageErrors(() => db.raw(
    `with s as (
       select id, org_id, epoch from sessions
        where id = ? and org_id = ? and epoch = ? and status in ('claimed', 'running', 'paused', 'finalizing')
     ), written as (
       select count(*)::int as n from session_activities a, s
        where a.session_id = s.id and a.org_id = s.org_id and a.kind = 'agent.progress' and a.id like s.id || ':' || s.epoch || ':progress:%'
     ), ins as (
       insert into session_activities (id, session_id, org_id, kind, body, created_at)
       select s.id || ':' || s.epoch || ':progress:' || ?, s.id, s.org_id, 'agent.progress', ?, ? from s
        where (select n from written) < ?
       on conflict (id) do nothing
       returning id
     )
     select (select count(*) from s)::int as live, (select count(*) from ins)::int as inserted,
       (select n from written) >= ? and not exists (select 1 from session_activities a, s where a.id = s.id || ':' || s.epoch || ':progress:' || ?) as full`,
    [sessionKey, orgId, epoch, key, body, at, maxPerRun, maxPerRun, key],
  ));
  const row = (result.rows as { live: number; inserted: number; full: boolean }[])[0]!;
  // `full` only for a new report: a retry of one already written is answered as written, whatever the count.
  return { live: Number(row.live) > 0, inserted: Number(row.inserted) > 0, full: row.full === true };
}

export interface AgentComment {
  readonly id: string;
  readonly orgId: string;
  readonly sessionKey: string;
  readonly epoch: number;
  readonly tracker: 'linear' | 'github';
  readonly issue: string;
  readonly sessionStatus: string;
  readonly body: string;
  readonly at: Date;
}

/**
 * Owes the agent's comment to the tracker outbox, which posts it as written (decision 0028's sender, retries and
 * all). Keyed by the caller: a retried call owes nothing twice. False when the org has no connection to that
 * tracker (nothing could ever send it).
 */
export async function oweAgentComment(db: Knex, c: AgentComment, maxPerRun: number): Promise<'owed' | 'unconnected' | 'full'> {
  const result = await withStorageErrors(() => db.raw(
    `with connected as (select 1 from integration_oauth_connections where org_id = ? and provider = ? limit 1),
     written as (select count(*)::int as n from tracker_comments where org_id = ? and session_id = ? and epoch = ? and kind = 'agent')
     insert into tracker_comments (id, org_id, session_id, epoch, tracker, issue, kind, session_status, cost_usd, duration_ms,
       status, attempts, next_attempt_at, created_at, updated_at, body)
     select ?, ?, ?, ?, ?, ?, 'agent', ?, 0, null, 'pending', 0, ?, ?, ?, ? where exists (select 1 from connected)
       and (select n from written) < ?
     on conflict (id) do nothing
     returning id`,
    [c.orgId, c.tracker, c.orgId, c.sessionKey, c.epoch, c.id, c.orgId, c.sessionKey, c.epoch, c.tracker, c.issue, c.sessionStatus, c.at, c.at, c.at, c.body, maxPerRun],
  ));
  if ((result.rows as unknown[]).length > 0) return 'owed';
  // Already owed under this id (a retried call) counts as owed.
  if (await db('tracker_comments').where({ id: c.id, org_id: c.orgId }).first('id')) return 'owed';
  const connected = await db('integration_oauth_connections').where({ org_id: c.orgId, provider: c.tracker }).first('org_id');
  return connected ? 'full' : 'unconnected';
}
