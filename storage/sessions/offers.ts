import type { Knex } from 'knex';
import type { SessionRepository } from '../../schemas/sessions/session-state.js';
import { agentSessionIdOf } from './run-reports.js';
import { HOLDING_STATUSES, roomUnderKeys } from '../queue-control/concurrency.js';
import { recordTurns, type Turn } from '../queue-control/fair-turns.js';

/**
 * What a worker is offered (`POST /api/daemon/poll`, the `offer` event of `GET /api/daemon/events`): the protocol of
 * issue 34 and decision 0075. A follow-up (run 2 or later: a prompt re-dispatched a finished session) goes first to the
 * worker that ran it, which holds its workspace: see `pollForWorker`.
 */
export interface OfferedSession {
  /** The public id: what the worker reports under and shows its agent. */
  readonly id: string;
  readonly projectId: string;
  readonly prompt: string;
  readonly agentCardId?: string;
  readonly workType?: string;
  readonly provider?: string;
  /** The repository the session runs on and the ref it starts from. */
  readonly repository?: SessionRepository;
  readonly ref?: string;
  /** The agent preset the dispatch asked for. */
  readonly agent?: string;
  /** The session's epoch: 1 for its first run, 2 and on for follow-ups. Absent on queued-prompt deliveries. */
  readonly run?: number;
  /** For a follow-up: the agent's conversation to resume, if a run reported one, and the branch the runs work on. */
  readonly followUp?: { readonly agentSessionId?: string; readonly branch: string };
  /** Prompts queued since the worker last polled, for sessions it already holds. */
  readonly queuedPrompts?: readonly { id: string; text: string }[];
}

/** The branch every run of a session works on, on the worker and pushed to the origin. */
export const sessionBranch = (publicId: string): string => `troupe/${publicId}`;

export interface OfferParts {
  readonly id: string;
  readonly projectId: string;
  readonly prompt: string;
  readonly agentCardId: string | null;
  readonly workType: string | null;
  readonly provider: string | null;
  readonly repository: SessionRepository | null;
  readonly ref: string | null;
  readonly agent: string | null;
  readonly run: number;
  readonly agentSessionId?: string | undefined;
}

/** One offer's shape, whether a poll reads it from the row or a push takes it from the actor's state. */
export function offerOf(o: OfferParts): OfferedSession {
  return {
    id: o.id, projectId: o.projectId, prompt: o.prompt,
    ...(o.agentCardId ? { agentCardId: o.agentCardId } : {}),
    ...(o.workType ? { workType: o.workType } : {}),
    ...(o.provider ? { provider: o.provider } : {}),
    ...(o.repository ? { repository: o.repository } : {}),
    ...(o.ref ? { ref: o.ref } : {}),
    ...(o.agent ? { agent: o.agent } : {}),
    run: o.run,
    ...(o.run > 1 ? { followUp: { ...(o.agentSessionId ? { agentSessionId: o.agentSessionId } : {}), branch: sessionBranch(o.id) } } : {}),
  };
}

/** Who may be offered a follow-up besides the worker that ran it (decision 0075). */
export interface FollowUpRouting {
  /** A worker seen since this time (ms) is live: the session lease. */
  readonly liveSince: number;
  /** A follow-up pending since before this time (ms) goes to any worker, live previous worker or not. */
  readonly graceSince: number;
}

type Row = Record<string, unknown>;

const OFFER_COLUMNS = [
  's.id', 's.public_id', 's.project_id', 's.prompt', 's.agent_card_id', 's.work_type', 's.provider', 's.epoch', 's.last_worker_id', 's.created_at',
  's.repository_id', 's.repository_url', 's.repository_name', 's.repository_default_branch', 's.ref', 's.agent_preset',
  's.priority', 's.concurrency_key',
];

const timeOf = (r: Row): number => new Date(r.created_at as string).getTime();

const repositoryOf = (r: Row): SessionRepository | null => (r.repository_id === null || r.repository_id === undefined ? null : {
  id: String(r.repository_id), url: String(r.repository_url), name: String(r.repository_name), defaultBranch: String(r.repository_default_branch),
});

/**
 * A pending session whose key already has its project's limit of sessions holding a claim waits (decision 0081). No
 * key, or no setting for the project, and nothing waits. The count is a probe of the partial index of migration 0051,
 * made only for keyed sessions of projects with a setting.
 */
const keyAtItsLimit = (db: Knex) => db('project_concurrency as pc')
  .whereRaw('pc.project_id = s.project_id')
  .whereRaw(`pc.default_limit <= (select count(*) from sessions h where h.org_id = s.org_id and h.concurrency_key = s.concurrency_key
    and h.status in (${HOLDING_STATUSES.map((st) => `'${st}'`).join(', ')}))`);

/**
 * The query leaves every candidate of a key below its limit; one poll must not hand out more of a key than the room
 * left under it, so later candidates of a full key wait for the next poll.
 */
async function withinKeyLimits(db: Knex, orgId: string, ordered: readonly Row[]): Promise<Row[]> {
  const keyed = ordered.filter((r) => r.concurrency_key !== null && r.concurrency_key !== undefined)
    .map((r) => ({ projectId: String(r.project_id), key: String(r.concurrency_key) }));
  const room = await roomUnderKeys(db, orgId, keyed);
  return ordered.filter((r) => {
    const left = r.concurrency_key === null || r.concurrency_key === undefined ? undefined : room.get(String(r.concurrency_key));
    if (left === undefined) return true;
    room.set(String(r.concurrency_key), left - 1);
    return left > 0;
  });
}

/** The turn columns of a row outside the rounds (a worker's own follow-up), so the two scans' rows have one shape. */
const noTurn = (db: Knex) => ['null::smallint as turn_weight', 'null::int as turn_used', 'null::timestamptz as turn_at', 'null::bigint as turn_rank']
  .map((c) => db.raw(c));

/** A follow-up goes to the worker that ran it while that worker is live and the grace has not run out (decision 0075). */
const mayTakeFollowUp = (db: Knex, workerId: string, routing: FollowUpRouting) => (q: Knex.QueryBuilder) => q
  .where('s.epoch', '<=', 1).orWhereNull('s.last_worker_id').orWhere('s.last_worker_id', workerId)
  .orWhere('s.updated_at', '<', new Date(routing.graceSince))
  .orWhereNotExists(db('daemon_workers as w').whereRaw('w.id = s.last_worker_id').where('w.last_seen_at', '>=', new Date(routing.liveSince)));

/**
 * The sessions a worker may take, in fair turns (decision 0085): the first `capacity` of each of its projects' queues
 * (highest priority first, FIFO within one: one descent of the per-project index of migration 0055 each, however long
 * a queue is), ranked by the round each falls in given its project's turn (`weight` offers a turn), then by the time
 * the project last finished a turn (never first), then priority and age. A burst in one project therefore waits its
 * turn behind the head of every other project's queue. Paused projects and a paused worker are offered nothing.
 * Exported for the bench that prints its plan (ops/bench/lifecycle-queue.ts).
 */
export function fairOfferQuery(db: Knex, orgId: string, projectIds: readonly string[], workerId: string, capacity: number, routing: FollowUpRouting) {
  const head = db('sessions as s').select(OFFER_COLUMNS)
    .whereRaw('s.project_id = p.id')
    .where({ 's.org_id': orgId, 's.status': 'pending' })
    .whereNot('s.lock_state', 'waiting')
    .where((q) => q.whereNull('s.concurrency_key').orWhereNotExists(keyAtItsLimit(db)))
    .where(mayTakeFollowUp(db, workerId, routing))
    .orderBy([{ column: 's.priority', order: 'desc' }, { column: 's.created_at' }, { column: 's.id' }])
    .limit(capacity);
  return db.raw(`select * from (
      select c.*, coalesce(t.weight, 1) as turn_weight, coalesce(t.turn_used, 0) as turn_used, t.turn_at,
        row_number() over (partition by p.id order by c.priority desc, c.created_at, c.id) as turn_rank
      from unnest(?::uuid[]) as p(id)
      left join project_queue_turns t on t.project_id = p.id and t.org_id = ?
      cross join lateral ? as c
      where not exists (select from project_queue_pauses qp where qp.project_id = p.id)
        and not exists (select from worker_pauses wp where wp.worker_id = ?)
    ) f
    order by (f.turn_used + f.turn_rank - 1) / f.turn_weight, f.turn_at nulls first, f.priority desc, f.created_at, f.id
    limit ?`, [[...projectIds], orgId, head, workerId, capacity]);
}

const turnOf = (r: Row): Turn => ({
  weight: Number(r.turn_weight), used: Number(r.turn_used), turnAt: r.turn_at === null || r.turn_at === undefined ? null : new Date(r.turn_at as string).getTime(),
});
const roundOf = (r: Row): number => (r.turn_rank === null || r.turn_rank === undefined ? 0 : Math.floor((Number(r.turn_used) + Number(r.turn_rank) - 1) / Number(r.turn_weight)));
const turnTime = (r: Row): number => (r.turn_at === null || r.turn_at === undefined ? -Infinity : new Date(r.turn_at as string).getTime());

/** The fair query's order, again for the merge with the worker's own follow-ups (which have no turn: round 0). */
const inTurn = (a: Row, b: Row): number => roundOf(a) - roundOf(b) || turnTime(a) - turnTime(b)
  || Number(b.priority) - Number(a.priority) || timeOf(a) - timeOf(b) || String(a.id).localeCompare(String(b.id));

/** How many sessions of each project in the rounds this poll offers, with the turn each was read at. */
function turnsOffered(rows: readonly Row[]): Map<string, { before: Turn; offered: number }> {
  const turns = new Map<string, { before: Turn; offered: number }>();
  for (const r of rows) {
    if (r.turn_rank === null || r.turn_rank === undefined) continue;
    const projectId = String(r.project_id);
    const seen = turns.get(projectId);
    turns.set(projectId, { before: seen?.before ?? turnOf(r), offered: (seen?.offered ?? 0) + 1 });
  }
  return turns;
}

/**
 * What a poll offers a worker: pending sessions of its projects that are not waiting for an issue lock, whose
 * project's queue is not paused and whose concurrency key has room (decision 0081), none while the worker itself is
 * paused (decision 0079), up to its capacity: the org's projects in fair turns, and within a project highest priority
 * first and oldest first within a priority (decision 0085); each project offered something moves on in its turn. Plus,
 * for sessions it holds, prompts queued for it, claimed with one UPDATE so two polls never deliver the same prompt. A follow-up is offered to the worker that ran the session while that worker is live and the
 * grace has not run out; to any worker after. This worker's own follow-ups come first: it holds their workspaces.
 */
export async function pollForWorker(
  db: Knex, orgId: string, projectIds: readonly string[], workerId: string, capacity: number, now: number, routing: FollowUpRouting,
): Promise<OfferedSession[]> {
  const offered: OfferedSession[] = [];
  if (capacity > 0 && projectIds.length > 0) {
    const pending = () => db('sessions as s').select(OFFER_COLUMNS)
      .where({ 's.org_id': orgId, 's.status': 'pending' })
      .whereIn('s.project_id', [...projectIds])
      .whereNot('s.lock_state', 'waiting')
      // A paused project's queue, or a paused worker, is offered nothing (decision 0079); both tables are nearly
      // always empty, so each is one probe of its primary key.
      .whereNotExists(db('project_queue_pauses as qp').whereRaw('qp.project_id = s.project_id'))
      .whereNotExists(db('worker_pauses as wp').where('wp.worker_id', workerId))
      // Under an OR, not an anti-join: the planner keeps reading the priority index in order and probes only the
      // keyed rows it meets, instead of joining every pending session to the settings before it can stop.
      .where((q) => q.whereNull('s.concurrency_key').orWhereNotExists(keyAtItsLimit(db)))
      // The worker's own follow-ups, highest priority first: the order of the partial index of migration 0051.
      .orderBy([{ column: 's.priority', order: 'desc' }, { column: 's.created_at' }, { column: 's.id' }])
      .limit(capacity);
    // Two scans in one statement: this worker's own follow-ups (the partial index of migration 0048), then the head of
    // each project's queue it may take, in fair turns (decision 0085); a row in both is offered once.
    const ownFollowUps = pending().where('s.epoch', '>', 1).where('s.last_worker_id', workerId).select(noTurn(db));
    const both = await db.unionAll([db.select('*').from(ownFollowUps.as('own')), fairOfferQuery(db, orgId, projectIds, workerId, capacity, routing)], true) as Row[];
    // A row in both keeps its turn, so the offer counts in its project's turn.
    const byId = new Map<string, Row>();
    for (const r of both) if (!byId.has(String(r.id)) || r.turn_rank !== null) byId.set(String(r.id), r);
    const own = (r: Row): number => (Number(r.epoch) > 1 && r.last_worker_id === workerId ? 0 : 1);
    const ordered = [...byId.values()].sort((a, b) => own(a) - own(b) || inTurn(a, b));
    const rows = (await withinKeyLimits(db, orgId, ordered)).slice(0, capacity);
    await recordTurns(db, orgId, turnsOffered(rows), now);
    const resumable = await Promise.all(rows.map((r) => (Number(r.epoch) > 1 ? agentSessionIdOf(db, orgId, String(r.id)) : undefined)));
    rows.forEach((r, i) => offered.push(offerOf({
      id: String(r.public_id), projectId: String(r.project_id), prompt: String(r.prompt),
      agentCardId: r.agent_card_id as string | null, workType: r.work_type as string | null, provider: r.provider as string | null,
      repository: repositoryOf(r), ref: r.ref as string | null, agent: r.agent_preset as string | null, run: Number(r.epoch),
      agentSessionId: resumable[i],
    })));
  }
  const delivered = await db('session_prompts as sp')
    .update({ delivered_at: new Date(now) })
    .whereIn('sp.id', db('session_prompts as q').join('sessions as s', 's.id', 'q.session_id')
      .where({ 's.worker_id': workerId, 's.org_id': orgId, 'q.queued': true })
      .whereNull('q.delivered_at').whereNull('q.archived_at')
      .select('q.id').limit(100))
    .returning(['sp.id', 'sp.session_id', 'sp.text']);
  const bySession = new Map<string, { id: string; text: string }[]>();
  for (const p of delivered as Row[]) {
    const list = bySession.get(p.session_id as string) ?? [];
    list.push({ id: p.id as string, text: p.text as string });
    bySession.set(p.session_id as string, list);
  }
  if (bySession.size > 0) {
    const held = await db('sessions').whereIn('id', [...bySession.keys()]).select('id', 'public_id', 'project_id', 'prompt');
    for (const r of held) offered.push({ id: r.public_id, projectId: r.project_id, prompt: r.prompt, queuedPrompts: bySession.get(r.id) ?? [] });
  }
  return offered;
}
