import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * Web-push subscriptions (one per user and endpoint) and the node-wide VAPID key pair (migration 0012). A
 * subscription is a single idempotent row keyed by (user, endpoint) with no state machine, so it is written here
 * directly rather than through an actor (decision 0015). Every read and delete is scoped by org and user.
 */

export interface PushSubscriptionRow {
  readonly id: string;
  readonly orgId: string;
  readonly userId: string;
  readonly endpoint: string;
  readonly p256dh: string;
  readonly auth: string;
}

/** Stores or refreshes a subscription; answers the id, stable across re-subscribes of the same endpoint. */
export async function upsertSubscription(db: Knex, s: Omit<PushSubscriptionRow, 'id'>, now: Date): Promise<string> {
  const [row] = await db('web_push_subscriptions')
    .insert({ id: randomUUID(), org_id: s.orgId, user_id: s.userId, endpoint: s.endpoint, p256dh: s.p256dh, auth: s.auth, created_at: now })
    .onConflict(['user_id', 'endpoint']).merge(['org_id', 'p256dh', 'auth'])
    .returning('id');
  return String((row as { id: string }).id);
}

export async function deleteSubscription(db: Knex, orgId: string, userId: string, endpoint: string): Promise<boolean> {
  // `returning` rather than the affected-row count, which not every dialect (PGlite's) reports.
  const rows = await db('web_push_subscriptions').where({ org_id: orgId, user_id: userId, endpoint }).delete().returning('id');
  return rows.length > 0;
}

export async function deleteSubscriptionById(db: Knex, id: string): Promise<void> {
  await db('web_push_subscriptions').where({ id }).delete();
}

export async function subscriptionsOf(db: Knex, orgId: string, userId: string): Promise<PushSubscriptionRow[]> {
  const rows = await db('web_push_subscriptions').where({ org_id: orgId, user_id: userId }).orderBy('created_at').limit(50);
  return rows.map((r: Record<string, unknown>) => ({
    id: String(r.id), orgId: String(r.org_id), userId: String(r.user_id), endpoint: String(r.endpoint), p256dh: String(r.p256dh), auth: String(r.auth),
  }));
}

export async function readVapidRow(db: Knex): Promise<{ publicKey: string; sealedPrivateKey: string } | undefined> {
  const row = await db('web_push_vapid').where({ id: 1 }).first();
  return row ? { publicKey: String(row.public_key), sealedPrivateKey: String(row.sealed_private_key) } : undefined;
}

/** Inserts the pair unless one exists already; whichever node wins, every node reads the same pair back. */
export async function insertVapidRowOnce(db: Knex, publicKey: string, sealedPrivateKey: string, now: Date): Promise<void> {
  await db('web_push_vapid').insert({ id: 1, public_key: publicKey, sealed_private_key: sealedPrivateKey, created_at: now }).onConflict('id').ignore();
}

/**
 * The org's members who have at least one push subscription there, with their org role: the only users an event
 * notification could reach, so the authorizer is asked about these and no one else.
 */
export async function subscribedMembers(db: Knex, orgId: string): Promise<Array<{ userId: string; role: 'owner' | 'admin' | 'member' | 'viewer' }>> {
  const rows = await db('org_memberships as m')
    .where('m.org_id', orgId)
    .whereExists(db('web_push_subscriptions as s').select(db.raw('1')).whereRaw('s.org_id = m.org_id and s.user_id = m.user_id'))
    .orderBy('m.user_id')
    .limit(500)
    .select<Array<{ user_id: string; role: 'owner' | 'admin' | 'member' | 'viewer' }>>('m.user_id', 'm.role');
  return rows.map((r) => ({ userId: String(r.user_id), role: r.role }));
}
