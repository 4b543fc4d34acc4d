import pg from 'pg';
import type { Ledger } from './load.js';

/**
 * Checks every write the service acknowledged against what the database holds once the faults are healed
 * (Jepsen-style). Lost: an acknowledged dispatch with no session, an acknowledged transition with no transition
 * row, an acknowledged mutation with no row. Duplicated: a mutation delivered in two heartbeat replies, a mutation
 * both cancelled (acknowledged) and delivered, a session's terminal side effect (the org's quota count) applied
 * more than once.
 */
export interface Verdict {
  readonly acknowledged: { dispatches: number; transitions: number; mutations: number; cancels: number };
  readonly lost: { dispatches: number; transitions: number; mutations: number };
  readonly duplicated: { deliveries: number; cancelledAndDelivered: number; terminalEffects: number };
  readonly lostTotal: number;
  readonly duplicatedTotal: number;
  readonly examples: string[];
}

export async function checkLedger(databaseUrl: string, orgId: string, ledger: Ledger): Promise<Verdict> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const examples: string[] = [];
    const ids = [...ledger.dispatched.keys()];
    // The ledger holds the ids clients are given (public ids); rows are keyed by the org's internal key (decision 0068).
    const sessions = await client.query<{ id: string; public_id: string; status: string }>('select id, public_id, status from sessions where org_id = $1', [orgId]);
    const publicIdOf = new Map(sessions.rows.map((r) => [r.id, r.public_id]));
    const present = new Set(sessions.rows.map((r) => r.public_id));
    const lostDispatches = ids.filter((id) => !present.has(id));
    examples.push(...lostDispatches.slice(0, 10).map((id) => `dispatch ${id} acknowledged, no session`));

    const transitions = await client.query<{ session_id: string; to_status: string }>('select session_id, to_status from session_transitions where org_id = $1', [orgId]);
    const recorded = new Set(transitions.rows.map((r) => `${publicIdOf.get(r.session_id) ?? r.session_id} ${r.to_status}`));
    const lostTransitions = [...ledger.transitions].filter((t) => !recorded.has(t));
    examples.push(...lostTransitions.slice(0, 3).map((t) => `transition ${t} acknowledged, not recorded`));

    const mutations = await client.query<{ id: string; status: string }>('select id, status from daemon_mutations where org_id = $1', [orgId]);
    const mutationStatus = new Map(mutations.rows.map((r) => [r.id, r.status]));
    const lostMutations = [...ledger.mutations].filter((id) => !mutationStatus.has(id));
    const lostCancels = [...ledger.cancelled].filter((id) => mutationStatus.get(id) !== 'cancelled');
    examples.push(...lostMutations.slice(0, 3).map((id) => `mutation ${id} acknowledged, no row`));
    examples.push(...lostCancels.slice(0, 3).map((id) => `mutation ${id} cancel acknowledged, row says ${mutationStatus.get(id)}`));

    const twiceDelivered = [...ledger.delivered].filter(([, n]) => n > 1);
    const cancelledAndDelivered = [...ledger.cancelled].filter((id) => ledger.delivered.has(id));
    examples.push(...cancelledAndDelivered.slice(0, 3).map((id) => `mutation ${id} cancelled and delivered`));

    const terminal = sessions.rows.filter((r) => r.status === 'completed' || r.status === 'failed' || r.status === 'stopped').length;
    const quota = await client.query<{ sessions: number }>('select coalesce(sum(sessions), 0)::int as sessions from fleet_quota_usage where org_id = $1', [orgId]);
    const extraTerminalEffects = Math.max(0, Number(quota.rows[0]?.sessions ?? 0) - terminal);
    if (extraTerminalEffects > 0) examples.push(`quota counts ${quota.rows[0]?.sessions} ended sessions, ${terminal} ended`);

    const lost = { dispatches: lostDispatches.length, transitions: lostTransitions.length, mutations: lostMutations.length + lostCancels.length };
    const duplicated = { deliveries: twiceDelivered.length, cancelledAndDelivered: cancelledAndDelivered.length, terminalEffects: extraTerminalEffects };
    return {
      acknowledged: { dispatches: ids.length, transitions: ledger.transitions.size, mutations: ledger.mutations.size, cancels: ledger.cancelled.size },
      lost, duplicated,
      lostTotal: lost.dispatches + lost.transitions + lost.mutations,
      duplicatedTotal: duplicated.deliveries + duplicated.cancelledAndDelivered + duplicated.terminalEffects,
      examples,
    };
  } finally {
    await client.end();
  }
}
