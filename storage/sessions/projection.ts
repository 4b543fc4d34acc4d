import type { SqlTx } from '../sql-tx.js';
import type { SessionEffect, SessionState } from '../../schemas/sessions/session-state.js';
import { oweTrackerComment, trackerTargetOf } from './tracker-comments.js';

const isTerminal = (status: string): boolean => status === 'completed' || status === 'failed' || status === 'stopped';

/**
 * The session actor's read models, written inside its snapshot transaction (so they never disagree with what it
 * answered). Terminal effects are recorded under an idempotency key in `session_effect_ledger` first: a replayed
 * projection (a crash after the write, a retried message) finds the key and does nothing twice. Plain SQL on the
 * snapshot's own connection (storage/sql-tx.ts, decision 0045): this is the hottest write path of a node.
 */

const ts = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

export async function projectSession(
  tx: SqlTx, id: string, next: SessionState, previous: SessionState, effects: readonly SessionEffect[], now: number,
): Promise<void> {
  const spec = next.spec;
  if (spec === null) return;
  for (const effect of effects) {
    switch (effect.type) {
      case 'sessionWritten':
        await writeSessionRow(tx, id, next, previous);
        break;
      case 'promptRecorded':
        await tx.query(
          `insert into session_prompts (id, session_id, org_id, epoch, text, queued, created_at) values ($1, $2, $3, $4, $5, $6, $7)
           on conflict (id) do nothing`,
          [effect.promptId, id, spec.orgId, next.epoch, effect.text, effect.queued, new Date(now)],
        );
        break;
      case 'activity':
        await tx.query(
          `insert into session_activities (id, session_id, org_id, kind, body, created_at) values ($1, $2, $3, $4, $5, $6)
           on conflict (id) do nothing`,
          [effect.key, id, spec.orgId, effect.kind, effect.body, new Date(now)],
        );
        break;
      case 'terminal':
        await runTerminalEffects(tx, id, next, effect, now);
        break;
    }
  }
}

/** The columns every write of the session row sets, in this order from `$1` (see `rowValues`). */
const ROW_COLUMNS = [
  'status', 'worker_id', 'epoch', 'cost_usd', 'error', 'phase', 'prompt', 'updated_at', 'claimed_at', 'started_at', 'finished_at', 'last_worker_id',
] as const;

function rowValues(s: SessionState): unknown[] {
  return [
    // Claim released: a terminal session is held by nobody, whatever worker ran it.
    s.status, isTerminal(s.status) ? null : s.workerId, s.epoch, s.costUsd, s.error, s.phase, s.prompt, new Date(s.updatedAt),
    ts(s.claimedAt), ts(s.startedAt), ts(s.finishedAt),
    // The worker that last ran it stays once no worker holds it (null keeps the one recorded).
    s.workerId,
  ];
}

const UPDATE_ROW = `update sessions set ${ROW_COLUMNS.map((c, i) => (c === 'last_worker_id' ? `${c} = coalesce($${i + 1}, ${c})` : `${c} = $${i + 1}`)).join(', ')}
  where id = $${ROW_COLUMNS.length + 1}`;

const SPEC_COLUMNS = ['id', 'org_id', 'project_id', 'tracker_session_id', 'tracker_issue', 'agent_card_id', 'work_type', 'provider', 'requested_by', 'created_at', 'lock_state'] as const;
const INSERT_ROW = `insert into sessions (${[...ROW_COLUMNS, ...SPEC_COLUMNS].join(', ')})
  values (${[...ROW_COLUMNS, ...SPEC_COLUMNS].map((_, i) => `$${i + 1}`).join(', ')})
  on conflict (id) do update set ${ROW_COLUMNS.map((c) => (c === 'last_worker_id' ? `${c} = coalesce(excluded.${c}, sessions.${c})` : `${c} = excluded.${c}`)).join(', ')}`;

/**
 * The row write and, when the status changed, its transition in one statement: the row's write is a data-modifying
 * `with` (run once, to completion, whatever the insert does), so a transition costs Postgres one round trip here
 * rather than two (G9, decision 0052). `$n` of the transition continue after the row's parameters.
 */
const withTransition = (rowSql: string, rowParams: number): string => `with written as (${rowSql})
  insert into session_transitions (id, session_id, org_id, epoch, from_status, to_status, worker_id, at)
  values (${Array.from({ length: 8 }, (_, i) => `$${rowParams + i + 1}`).join(', ')})
  on conflict (id) do nothing`;
const INSERT_ROW_PARAMS = ROW_COLUMNS.length + SPEC_COLUMNS.length;
const UPDATE_ROW_PARAMS = ROW_COLUMNS.length + 1;
const INSERT_ROW_WITH_TRANSITION = withTransition(INSERT_ROW, INSERT_ROW_PARAMS);
const UPDATE_ROW_WITH_TRANSITION = withTransition(UPDATE_ROW, UPDATE_ROW_PARAMS);

async function writeSessionRow(tx: SqlTx, id: string, s: SessionState, previous: SessionState): Promise<void> {
  const spec = s.spec!;
  const inserting = previous.status === 'absent';
  const row = inserting
    ? [
      ...rowValues(s), id, spec.orgId, spec.projectId, spec.trackerSessionId, spec.trackerIssue, spec.agentCardId, spec.workType,
      spec.provider, spec.requestedBy, new Date(s.createdAt), 'none',
    ]
    : [...rowValues(s), id];
  if (s.status === previous.status) {
    await tx.query(inserting ? INSERT_ROW : UPDATE_ROW, row);
  } else {
    const transition = [`${s.updatedAt}.${id}.${s.epoch}.${s.status}`, id, spec.orgId, s.epoch, previous.status, s.status, s.workerId, new Date(s.updatedAt)];
    await tx.query(inserting ? INSERT_ROW_WITH_TRANSITION : UPDATE_ROW_WITH_TRANSITION, [...row, ...transition]);
  }
  // A session (re-)entering the queue with a tracker issue takes the issue's lock, or waits for it.
  if (s.status === 'pending' && previous.status !== 'pending' && spec.trackerIssue !== null) {
    await acquireIssueLock(tx, spec.orgId, spec.trackerIssue, id, s.updatedAt);
  }
}

/**
 * Serialises everything done to one issue's lock (acquire, release, promote) on a transaction-scoped advisory
 * lock, so a release can never miss a waiter whose own transaction was still in flight.
 */
async function lockIssue(tx: SqlTx, orgId: string, issue: string): Promise<void> {
  await tx.query('select pg_advisory_xact_lock(hashtextextended($1, 7))', [`${orgId}:${issue}`]);
}

async function acquireIssueLock(tx: SqlTx, orgId: string, issue: string, sessionId: string, now: number): Promise<void> {
  await lockIssue(tx, orgId, issue);
  const taken = await tx.query<{ session_id: string }>(
    `insert into session_issue_locks (org_id, tracker_issue, session_id, acquired_at) values ($1, $2, $3, $4)
     on conflict (org_id, tracker_issue) do nothing returning session_id`,
    [orgId, issue, sessionId, new Date(now)],
  );
  const holder = taken.rows[0]?.session_id
    ?? (await tx.query<{ session_id: string }>('select session_id from session_issue_locks where org_id = $1 and tracker_issue = $2', [orgId, issue])).rows[0]?.session_id;
  await tx.query('update sessions set lock_state = $1 where id = $2', [holder === sessionId ? 'held' : 'waiting', sessionId]);
}

/**
 * Everything spec 3.1 says happens on a terminal transition, once per run: cost persisted and the claim released
 * (the session row, already written with no worker), fleet quota accounted, inbox archived, issue lock released and
 * the next waiting session for the issue promoted.
 * The comment on the tracker issue the session came from is owed with them (decision 0028).
 */
async function runTerminalEffects(
  tx: SqlTx, id: string, s: SessionState, effect: Extract<SessionEffect, { type: 'terminal' }>, now: number,
): Promise<void> {
  const recorded = await tx.query(
    'insert into session_effect_ledger (key, recorded_at) values ($1, $2) on conflict (key) do nothing returning key',
    [effect.key, new Date(now)],
  );
  if (recorded.rows.length === 0) return;
  const spec = s.spec!;
  const period = new Date(now).toISOString().slice(0, 7);
  await tx.query(
    `insert into fleet_quota_usage (org_id, period, sessions, cost_usd) values ($1, $2, 1, $3)
     on conflict (org_id, period) do update set sessions = fleet_quota_usage.sessions + 1, cost_usd = fleet_quota_usage.cost_usd + excluded.cost_usd`,
    [spec.orgId, period, effect.costUsd],
  );
  await tx.query('update session_prompts set archived_at = $1 where session_id = $2 and archived_at is null', [new Date(now), id]);
  if (spec.trackerIssue !== null) await releaseIssueLock(tx, spec.orgId, spec.trackerIssue, id, now);
  // Tracker activity (spec 3.1): owed to the issue the session came from, posted by the tracker outbox (decision 0028).
  const target = trackerTargetOf(spec);
  if (target !== null) {
    const started = s.startedAt ?? s.claimedAt;
    await oweTrackerComment(tx, {
      id: `${effect.key}:tracker`, orgId: spec.orgId, sessionId: id, epoch: s.epoch, target,
      kind: effect.status === 'stopped' ? 'stop' : 'terminal', sessionStatus: effect.status, costUsd: effect.costUsd,
      durationMs: started === null || s.finishedAt === null ? null : Math.max(0, s.finishedAt - started), at: new Date(now),
    });
  }
}

async function releaseIssueLock(tx: SqlTx, orgId: string, issue: string, sessionId: string, now: number): Promise<void> {
  await lockIssue(tx, orgId, issue);
  // `returning` rather than the affected-row count, which PGlite does not report for DELETE.
  const released = await tx.query(
    'delete from session_issue_locks where org_id = $1 and tracker_issue = $2 and session_id = $3 returning session_id', [orgId, issue, sessionId],
  );
  await tx.query(`update sessions set lock_state = 'none' where id = $1`, [sessionId]);
  if (released.rows.length === 0) return;
  const next = (await tx.query<{ id: string }>(
    `select id from sessions where org_id = $1 and tracker_issue = $2 and status = 'pending' and lock_state = 'waiting'
     order by created_at, id limit 1`,
    [orgId, issue],
  )).rows[0];
  if (next === undefined) return;
  await tx.query(
    'insert into session_issue_locks (org_id, tracker_issue, session_id, acquired_at) values ($1, $2, $3, $4)', [orgId, issue, next.id, new Date(now)],
  );
  await tx.query(`update sessions set lock_state = 'held' where id = $1`, [next.id]);
}
