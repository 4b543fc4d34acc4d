import type { Knex } from 'knex';
import { decodeCursor, encodeCursor } from '../page-cursor.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { AgentCardPayload, AgentCardRecord, Overlay, SourceVersion } from '../../schemas/agents/agent-card.js';

/**
 * Read models of agent cards, their versions and marketplace listings (migration 0012). Written only by the
 * agent-card actor's projection, inside its snapshot transaction; every org-owned read is scoped by org. Listings
 * are the one deliberately cross-org read: the marketplace is where orgs see each other's published cards.
 */

export interface AgentCardView {
  readonly id: string;
  readonly orgId: string;
  readonly name: string;
  readonly version: number;
  readonly payload: AgentCardPayload;
  readonly install: { listingId: string; pinnedVersion: number; overlay: Overlay } | null;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface ListingView {
  readonly id: string;
  readonly agentCardId: string;
  readonly publisherOrgId: string;
  readonly name: string;
  readonly description: string;
  readonly latestVersion: number;
  readonly capabilities: readonly string[];
  readonly createdAt: string;
}

const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;

export async function writeCard(trx: Knex, card: AgentCardRecord): Promise<void> {
  const row = {
    id: card.id, org_id: card.orgId, name: card.payload.name, version: card.version, payload: JSON.stringify(card.payload),
    listing_id: card.install?.listingId ?? null, pinned_version: card.install?.pinnedVersion ?? null,
    overlay: card.install ? JSON.stringify(card.install.overlay) : null,
    created_by: card.createdBy, created_at: new Date(card.createdAt), updated_at: new Date(card.updatedAt),
  };
  await trx('agent_cards').insert(row).onConflict('id').merge(['name', 'version', 'payload', 'listing_id', 'pinned_version', 'overlay', 'updated_at']);
}

export async function appendCardVersion(trx: Knex, card: AgentCardRecord, by: string, sourceVersion: number | null): Promise<void> {
  await trx('agent_card_versions').insert({
    agent_card_id: card.id, org_id: card.orgId, version: card.version, payload: JSON.stringify(card.payload),
    source_version: sourceVersion, changed_by: by, created_at: new Date(card.updatedAt),
  });
}

/**
 * Inserts a listing unless the org already has `quota` of them (409 CONFLICT). The count and the insert happen under
 * a per-org advisory lock, so concurrent publishes from one org cannot overshoot the quota.
 */
export async function insertListing(trx: Knex, listing: { id: string; orgId: string; cardId: string; by: string; at: number; quota: number }): Promise<void> {
  await trx.raw("select pg_advisory_xact_lock(hashtext('troupe.marketplace_listings'), hashtext(?))", [listing.orgId]);
  const counted = await trx('marketplace_listings').where({ publisher_org_id: listing.orgId }).count({ n: '*' }).first();
  if (Number((counted as { n?: unknown } | undefined)?.n ?? 0) >= listing.quota) {
    throw new TroupeError('CONFLICT', `this org already has ${listing.quota} marketplace listings, its quota`, { quota: listing.quota });
  }
  await trx('marketplace_listings').insert({
    id: listing.id, publisher_org_id: listing.orgId, agent_card_id: listing.cardId, published_by: listing.by, created_at: new Date(listing.at),
  }).onConflict('id').ignore();
}

function toCardView(r: Record<string, unknown>): AgentCardView {
  return {
    id: String(r.id), orgId: String(r.org_id), name: String(r.name), version: Number(r.version),
    payload: json<AgentCardPayload>(r.payload),
    install: r.listing_id === null || r.listing_id === undefined ? null
      : { listingId: String(r.listing_id), pinnedVersion: Number(r.pinned_version), overlay: json<Overlay>(r.overlay ?? {}) },
    createdBy: String(r.created_by), createdAt: iso(r.created_at), updatedAt: iso(r.updated_at),
  };
}

export async function findCard(db: Knex, orgId: string, id: string): Promise<AgentCardView | undefined> {
  const row = await db('agent_cards').where({ org_id: orgId, id }).first();
  return row ? toCardView(row) : undefined;
}

export async function listCards(db: Knex, orgId: string): Promise<AgentCardView[]> {
  return (await db('agent_cards').where({ org_id: orgId }).orderBy('created_at', 'desc').limit(500)).map(toCardView);
}

const listingColumns = [
  'l.id', 'l.agent_card_id', 'l.publisher_org_id', 'l.created_at', 'c.version as latest_version', 'c.payload',
] as const;

function toListingView(r: Record<string, unknown>): ListingView {
  const payload = json<AgentCardPayload>(r.payload);
  return {
    id: String(r.id), agentCardId: String(r.agent_card_id), publisherOrgId: String(r.publisher_org_id), name: payload.name,
    description: payload.description, latestVersion: Number(r.latest_version), capabilities: payload.capabilities, createdAt: iso(r.created_at),
  };
}

export async function findListing(db: Knex, id: string): Promise<ListingView | undefined> {
  const row = await db('marketplace_listings as l').join('agent_cards as c', 'c.id', 'l.agent_card_id').where('l.id', id).first(...listingColumns);
  return row ? toListingView(row) : undefined;
}

export interface ListingFilter {
  readonly limit: number;
  readonly cursor?: string;
  readonly publisherOrgId?: string;
  /** Case-insensitive text in the listing's name or description. */
  readonly text?: string;
}

/** Listings newest first, a page at a time (keyset on created_at, id), filtered by publisher and text. */
export async function listListings(db: Knex, f: ListingFilter): Promise<{ listings: ListingView[]; nextCursor: string | null }> {
  const q = db('marketplace_listings as l').join('agent_cards as c', 'c.id', 'l.agent_card_id').select(...listingColumns);
  if (f.publisherOrgId !== undefined) q.where('l.publisher_org_id', f.publisherOrgId);
  if (f.text !== undefined) {
    const like = `%${f.text.replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
    q.andWhere((w) => w.whereRaw("c.payload->>'name' ilike ?", [like]).orWhereRaw("c.payload->>'description' ilike ?", [like]));
  }
  if (f.cursor !== undefined) {
    const after = decodeCursor(f.cursor, UUID);
    q.andWhere((w) => w.where('l.created_at', '<', after.createdAt)
      .orWhere((same) => same.where('l.created_at', '=', after.createdAt).andWhere('l.id', '<', after.id)));
  }
  const rows = await q.orderBy([{ column: 'l.created_at', order: 'desc' }, { column: 'l.id', order: 'desc' }]).limit(f.limit + 1);
  const listings = rows.slice(0, f.limit).map(toListingView);
  const last = listings[listings.length - 1];
  return { listings, nextCursor: rows.length > f.limit && last ? encodeCursor(last.createdAt, last.id) : null };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One version of a listed (source) card, whichever org owns it: installing orgs read their source through here. */
export async function sourceVersion(db: Knex, sourceCardId: string, version?: number): Promise<SourceVersion | undefined> {
  const q = db('agent_card_versions').where({ agent_card_id: sourceCardId });
  const row = await (version === undefined ? q.orderBy('version', 'desc') : q.andWhere({ version })).first();
  return row ? { version: Number(row.version), payload: json<AgentCardPayload>(row.payload), createdAt: iso(row.created_at), changedBy: String(row.changed_by) } : undefined;
}

/** The source card an installed card's listing points at. */
export async function listingSourceCard(db: Knex, listingId: string): Promise<string | undefined> {
  const row = await db('marketplace_listings').where({ id: listingId }).first('agent_card_id');
  return row ? String(row.agent_card_id) : undefined;
}
