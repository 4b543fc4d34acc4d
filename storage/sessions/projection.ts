import type { SqlTx } from '../sql-tx.js';
import { APPLIED, TransitionStatement, type FollowUp } from '../transition-statement.js';
import { DEFAULT_PRIORITY, type SessionEffect, type SessionState } from '../../schemas/sessions/session-state.js';
import { publicSessionId } from '../../schemas/sessions/session-ids.js';
import { oweTrackerComment, trackerTargetOf } from './tracker-comments.js';
import { checkKeyRoomAtClaim } from '../queue-control/claim-check.js';
import { transcriptParts, type GatedEntry } from './transcript-statement.js';

const isTerminal = (status: string): boolean => status === 'completed' || status === 'failed' || status === 'stopped';

/**
 * The session actor's read models, written with its snapshot (so they never disagree with what it answered).
 * Terminal effects are recorded under an idempotency key in `session_effect_ledger` first: a replayed projection
 * (a crash after the write, a retried message) finds the key and does nothing twice. Parts of the snapshot's own
 * statement (storage/transition-statement.ts, decision 0055): this is the hottest write path of a node, and a
 * transition without an issue lock or a tracker comment costs Postgres that one statement.
 */

const ts = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

export function projectSessionStatement(
  st: TransitionStatement, id: string, next: SessionState, previous: SessionState, effects: readonly SessionEffect[], now: number,
): FollowUp | undefined {
  const spec = next.spec;
  if (spec === null) return undefined;
  const followUps: FollowUp[] = [];
  // What the transition adds to the session's transcript (issue 35 §1), each entry gated on its fact being new.
  const transcript: GatedEntry[] = [];
  effects.forEach((effect, i) => {
    switch (effect.type) {
      case 'sessionWritten': {
        writeSessionRow(st, id, next, previous);
        if (next.status !== previous.status) transcript.push(statusEntry(next, previous));
        // A session (re-)entering the queue with a tracker issue takes the issue's lock, or waits for it: it reads the
        // lock under an advisory lock, so after the row is written.
        if (next.status === 'pending' && previous.status !== 'pending' && spec.trackerIssue !== null) {
          const issue = spec.trackerIssue;
          followUps.push((tx) => acquireIssueLock(tx, spec.orgId, issue, id, next.updatedAt));
        }
        // A claim of a keyed session is refused, and nothing of it written, past its project's limit (decision 0085).
        const key = spec.concurrencyKey;
        if (next.status === 'claimed' && previous.status === 'pending' && key !== undefined && key !== null) {
          followUps.push((tx) => checkKeyRoomAtClaim(tx, spec.orgId, spec.projectId, key));
        }
        break;
      }
      case 'promptRecorded':
        st.part(`s_prompt_${i}`, `insert into session_prompts (id, session_id, org_id, epoch, text, queued, created_at)
          select ${st.list([effect.promptId, id, spec.orgId, next.epoch, effect.text, effect.queued, new Date(now)])} where ${APPLIED}
          on conflict (id) do nothing returning 1`);
        transcript.push({
          gate: `exists (select from s_prompt_${i})`,
          entry: { kind: 'prompt', text: effect.text, at: new Date(now), run: next.epoch, data: { promptId: effect.promptId, queued: effect.queued } },
        });
        break;
      case 'activity':
        st.part(`s_activity_${i}`, `insert into session_activities (id, session_id, org_id, kind, body, created_at)
          select ${st.list([effect.key, id, spec.orgId, effect.kind, effect.body, new Date(now)])} where ${APPLIED}
          on conflict (id) do nothing`);
        break;
      case 'stopRecorded':
        recordStop(st, i, id, next, effect, now);
        if (effect.reason !== null) transcript.push(stopNotice(i, next, effect, now));
        break;
      case 'terminal': {
        const followUp = terminalEffects(st, id, next, effect, now);
        if (followUp !== undefined) followUps.push(followUp);
        break;
      }
    }
  });
  transcriptParts(st, spec.orgId, id, transcript, now);
  return chain(followUps);
}

/** A status change as a transcript entry: `claimed → running`, with the reason of a failure. */
function statusEntry(next: SessionState, previous: SessionState): GatedEntry {
  const text = `${previous.status} → ${next.status}${next.error !== null && next.status === 'failed' ? `: ${next.error}` : ''}`;
  return {
    gate: 'exists (select from s_transition)',
    entry: {
      kind: 'status', text, at: new Date(next.updatedAt), run: next.epoch,
      data: { status: next.status, previousStatus: previous.status, ...(next.workerId !== null ? { workerId: next.workerId } : {}) },
    },
  };
}

/**
 * A stop's audit entry goes to the audit outbox (decision 0041) and the reason the server stopped it to
 * `session_stop_reasons`, both with the snapshot: the stop is audited exactly once, whoever asked for it.
 */
function recordStop(
  st: TransitionStatement, i: number, id: string, next: SessionState, effect: Extract<SessionEffect, { type: 'stopRecorded' }>, now: number,
): void {
  const orgId = next.spec!.orgId;
  const payload = { previousStatus: effect.previousStatus, ...(effect.reason === null ? {} : { stopReason: effect.reason }), ...effect.details };
  st.part(`s_stop_audit_${i}`, `insert into audit_outbox (org_id, type, actor, subject, payload, at)
    select ${st.list([orgId, 'session.stopped', effect.requestedBy, publicSessionId(next.spec!.trackerSessionId)])}, ${st.value(JSON.stringify(payload))}::jsonb, ${st.value(new Date(now))}
    where ${APPLIED}`);
  if (effect.reason === null) return;
  st.part(`s_stop_reason_${i}`, `insert into session_stop_reasons (session_id, org_id, epoch, reason, stopped_at)
    select ${st.list([id, orgId, next.epoch, effect.reason, new Date(now)])} where ${APPLIED}
    on conflict (session_id, epoch) do nothing returning 1`);
}

/** Why the server stopped the run (`budget`, `superseded`), as a transcript notice beside its status change. */
function stopNotice(i: number, next: SessionState, effect: Extract<SessionEffect, { type: 'stopRecorded' }>, now: number): GatedEntry {
  const details = Object.entries(effect.details).map(([k, v]) => `${k} ${v}`).join(', ');
  return {
    gate: `exists (select from s_stop_reason_${i})`,
    entry: {
      kind: 'notice', text: `The server stopped this run: ${effect.reason}${details === '' ? '' : ` (${details})`}.`, at: new Date(now), run: next.epoch,
      data: { stopReason: effect.reason!, ...effect.details },
    },
  };
}

/** The follow-ups in order, as one; none is no follow-up (the transition stays one statement). */
export function chain(followUps: readonly FollowUp[]): FollowUp | undefined {
  if (followUps.length === 0) return undefined;
  return async (tx, returned) => {
    for (const f of followUps) await f(tx, returned);
  };
}

/**
 * The projection on its own, with no snapshot to fence it (every part applies), in `tx`: for tests that replay a
 * projection the way a crash after its commit would.
 */
export async function projectSession(
  tx: SqlTx, id: string, next: SessionState, previous: SessionState, effects: readonly SessionEffect[], now: number,
): Promise<void> {
  const st = new TransitionStatement('select 1 as version', []);
  const followUp = projectSessionStatement(st, id, next, previous, effects, now);
  const { returned } = await st.run(tx);
  if (followUp !== undefined) await followUp(tx, returned);
}

/** The columns every write of the session row sets, in this order (see `rowValues`). */
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

const SPEC_COLUMNS = [
  'id', 'public_id', 'org_id', 'project_id', 'tracker_session_id', 'tracker_issue', 'agent_card_id', 'work_type', 'provider', 'requested_by', 'created_at', 'lock_state',
  'repository_id', 'repository_url', 'repository_name', 'repository_default_branch', 'ref', 'agent_preset', 'priority', 'concurrency_key',
] as const;
const ON_CONFLICT_SET = ROW_COLUMNS.map((c) => (c === 'last_worker_id' ? `${c} = coalesce(excluded.${c}, sessions.${c})` : `${c} = excluded.${c}`)).join(', ');

/** The row's write and, when the status changed, its transition (the `from` and `to` of the session's history). */
function writeSessionRow(st: TransitionStatement, id: string, s: SessionState, previous: SessionState): void {
  const spec = s.spec!;
  if (previous.status === 'absent') {
    const values = [
      ...rowValues(s), id, publicSessionId(spec.trackerSessionId), spec.orgId, spec.projectId, spec.trackerSessionId, spec.trackerIssue, spec.agentCardId, spec.workType,
      spec.provider, spec.requestedBy, new Date(s.createdAt), 'none',
      // What the session runs on never changes after dispatch, so only the insert writes it (decision 0075).
      spec.repository?.id ?? null, spec.repository?.url ?? null, spec.repository?.name ?? null, spec.repository?.defaultBranch ?? null,
      spec.ref ?? null, spec.agent ?? null, spec.priority ?? DEFAULT_PRIORITY, spec.concurrencyKey ?? null,
    ];
    st.part('s_row', `insert into sessions (${[...ROW_COLUMNS, ...SPEC_COLUMNS].join(', ')}) select ${st.list(values)} where ${APPLIED}
      on conflict (id) do update set ${ON_CONFLICT_SET}`);
  } else {
    const set = rowValues(s).map((v, i) => {
      const c = ROW_COLUMNS[i]!;
      return c === 'last_worker_id' ? `${c} = coalesce(${st.value(v)}, ${c})` : `${c} = ${st.value(v)}`;
    });
    st.part('s_row', `update sessions set ${set.join(', ')} where id = ${st.value(id)} and ${APPLIED}`);
  }
  if (s.status === previous.status) return;
  const transition = [`${s.updatedAt}.${id}.${s.epoch}.${s.status}`, id, spec.orgId, s.epoch, previous.status, s.status, s.workerId, new Date(s.updatedAt)];
  st.part('s_transition', `insert into session_transitions (id, session_id, org_id, epoch, from_status, to_status, worker_id, at)
    select ${st.list(transition)} where ${APPLIED} on conflict (id) do nothing returning 1`);
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
 * (the session row, written with no worker), fleet quota accounted, inbox archived, issue lock released and the next
 * waiting session promoted. The comment on the tracker issue the session came from is owed with them (decision 0028).
 * All of it waits on the ledger's key being new; the issue lock and the comment follow the statement.
 */
function terminalEffects(
  st: TransitionStatement, id: string, s: SessionState, effect: Extract<SessionEffect, { type: 'terminal' }>, now: number,
): FollowUp | undefined {
  const spec = s.spec!;
  st.part('s_ledger', `insert into session_effect_ledger (key, recorded_at) select ${st.list([effect.key, new Date(now)])} where ${APPLIED}
    on conflict (key) do nothing returning key`, true);
  const recorded = 'exists (select from s_ledger)';
  const period = new Date(now).toISOString().slice(0, 7);
  st.part('s_quota', `insert into fleet_quota_usage (org_id, period, sessions, cost_usd) select ${st.list([spec.orgId, period])}, 1, ${st.value(effect.costUsd)}
    where ${recorded}
    on conflict (org_id, period) do update set sessions = fleet_quota_usage.sessions + 1, cost_usd = fleet_quota_usage.cost_usd + excluded.cost_usd`);
  st.part('s_archive', `update session_prompts set archived_at = ${st.value(new Date(now))}
    where session_id = ${st.value(id)} and archived_at is null and ${recorded}`);
  const issue = spec.trackerIssue;
  const target = trackerTargetOf(spec);
  if (issue === null && target === null) return undefined;
  return async (tx, returned) => {
    if (!returned.has('s_ledger')) return;
    if (issue !== null) await releaseIssueLock(tx, spec.orgId, issue, id, now);
    // Tracker activity (spec 3.1): owed to the issue the session came from, posted by the tracker outbox (decision 0028).
    if (target !== null) {
      const started = s.startedAt ?? s.claimedAt;
      await oweTrackerComment(tx, {
        id: `${effect.key}:tracker`, orgId: spec.orgId, sessionId: id, epoch: s.epoch, target,
        kind: effect.status === 'stopped' ? 'stop' : 'terminal', sessionStatus: effect.status, costUsd: effect.costUsd,
        durationMs: started === null || s.finishedAt === null ? null : Math.max(0, s.finishedAt - started), at: new Date(now),
      });
    }
  };
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
