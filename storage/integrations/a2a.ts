import type { Knex } from 'knex';
import type { ExternalAgentCard, ExternalAgentRecord, TrustLevel } from '../../schemas/agents/external-agent.js';

/** The `external_agents` read model (migration 0012): written by the external-agent actor's projection, read by org. */

/** The external agent record of spec 2.7. */
export interface ExternalAgentView {
  readonly id: string;
  readonly orgId: string;
  readonly url: string;
  readonly trustLevel: TrustLevel;
  readonly card: ExternalAgentCard;
  readonly lastFetchedAt: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly reachable: boolean;
}

const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());

export function externalAgentView(a: ExternalAgentRecord): ExternalAgentView {
  return {
    id: a.id, orgId: a.orgId, url: a.url, trustLevel: a.trustLevel, card: a.card,
    lastFetchedAt: a.lastFetchedAt === null ? null : new Date(a.lastFetchedAt).toISOString(),
    createdAt: new Date(a.createdAt).toISOString(), updatedAt: new Date(a.updatedAt).toISOString(), reachable: a.reachable,
  };
}

export async function writeExternalAgent(trx: Knex, a: ExternalAgentRecord): Promise<void> {
  await trx('external_agents').insert({
    id: a.id, org_id: a.orgId, url: a.url, trust_level: a.trustLevel, card: JSON.stringify(a.card), reachable: a.reachable,
    last_fetched_at: a.lastFetchedAt === null ? null : new Date(a.lastFetchedAt), created_at: new Date(a.createdAt), updated_at: new Date(a.updatedAt),
  }).onConflict('id').merge(['trust_level', 'card', 'reachable', 'last_fetched_at', 'updated_at']);
}

function toView(r: Record<string, unknown>): ExternalAgentView {
  return {
    id: String(r.id), orgId: String(r.org_id), url: String(r.url), trustLevel: r.trust_level as TrustLevel,
    card: (typeof r.card === 'string' ? JSON.parse(r.card) : r.card) as ExternalAgentCard,
    lastFetchedAt: r.last_fetched_at ? iso(r.last_fetched_at) : null, createdAt: iso(r.created_at), updatedAt: iso(r.updated_at),
    reachable: Boolean(r.reachable),
  };
}

export async function findExternalAgent(db: Knex, orgId: string, id: string): Promise<ExternalAgentView | undefined> {
  const row = await db('external_agents').where({ org_id: orgId, id }).first();
  return row ? toView(row) : undefined;
}

export async function listExternalAgents(db: Knex, orgId: string): Promise<ExternalAgentView[]> {
  return (await db('external_agents').where({ org_id: orgId }).orderBy('created_at', 'asc').limit(500)).map(toView);
}
