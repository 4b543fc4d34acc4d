import type { Knex } from 'knex';

/**
 * What the webhook sweeper needs of `provider_webhook_events` (migration 0013): the message each fresh delivery
 * was handed on with, and the deliveries still `received` (no outcome recorded) long after they arrived. A claim
 * bumps `resend_count` only if nobody else did in between, so of several nodes sweeping at once one re-sends.
 */
export async function storeRouteMessage(db: Knex, id: string, message: unknown): Promise<void> {
  await db('provider_webhook_events').where({ id }).update({ route_message: JSON.stringify(message) });
}

export interface StuckDelivery {
  readonly id: string;
  readonly resendCount: number;
  readonly routeMessage: unknown;
}

export async function stuckDeliveries(db: Knex, olderThan: Date, maxResends: number, limit: number): Promise<StuckDelivery[]> {
  const rows = await db('provider_webhook_events')
    .where({ status: 'received' })
    .whereNotNull('route_message')
    .where('resend_count', '<', maxResends)
    .whereRaw('coalesce(last_resent_at, received_at) < ?', [olderThan])
    .orderBy('received_at')
    .limit(limit)
    .select<Array<{ id: string; resend_count: number; route_message: unknown }>>('id', 'resend_count', 'route_message');
  return rows.map((r) => ({
    id: r.id, resendCount: Number(r.resend_count),
    routeMessage: typeof r.route_message === 'string' ? JSON.parse(r.route_message) as unknown : r.route_message,
  }));
}

export async function claimResend(db: Knex, d: StuckDelivery, at: Date): Promise<boolean> {
  const n = await db('provider_webhook_events')
    .where({ id: d.id, status: 'received', resend_count: d.resendCount })
    .update({ resend_count: d.resendCount + 1, last_resent_at: at });
  return Number(n) === 1;
}

/** A delivery re-sent as often as allowed without an outcome: recorded failed, so operators see it. */
export async function giveUpDelivery(db: Knex, id: string, detail: string, at: Date): Promise<void> {
  await db('provider_webhook_events').where({ id, status: 'received' })
    .update({ status: 'failed', outcome: JSON.stringify({ detail }), routed_at: at });
}
