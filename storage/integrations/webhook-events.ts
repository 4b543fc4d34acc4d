import type { Knex } from 'knex';
import { isUniqueViolation } from '../identity/orgs.js';

/**
 * Accepted provider deliveries (decision 0014). The row is written before the 200 and is what makes a repeat a
 * duplicate: (org, provider, delivery id) is unique, and so is (org, provider, digest of the signed body), because
 * some providers' delivery ids travel in an unsigned header (decision 0025). The provider-event actor fills status,
 * outcome and session.
 */
export type WebhookEventStatus = 'received' | 'routed' | 'ignored' | 'failed';

export interface WebhookEventRecord {
  readonly id: string;
  readonly orgId: string;
  readonly provider: string;
  readonly deliveryId: string;
  readonly eventType: string;
  readonly correlationId: string;
  readonly status: WebhookEventStatus;
  readonly outcome: Record<string, unknown>;
  readonly sessionId: string | null;
  readonly receivedAt: string;
  readonly routedAt: string | null;
}

interface Row {
  id: string; org_id: string; provider: string; delivery_id: string; event_type: string; correlation_id: string;
  status: WebhookEventStatus; outcome: Record<string, unknown> | string; session_id: string | null; received_at: Date; routed_at: Date | null;
}

const toRecord = (r: Row): WebhookEventRecord => ({
  id: r.id, orgId: r.org_id, provider: r.provider, deliveryId: r.delivery_id, eventType: r.event_type,
  correlationId: r.correlation_id, status: r.status,
  outcome: typeof r.outcome === 'string' ? JSON.parse(r.outcome) as Record<string, unknown> : r.outcome,
  sessionId: r.session_id, receivedAt: new Date(r.received_at).toISOString(), routedAt: r.routed_at ? new Date(r.routed_at).toISOString() : null,
});

/**
 * Records a delivery; when the provider already delivered it to this org (the same delivery id, or the same signed
 * bytes under another id), returns the first record instead.
 */
export async function recordWebhookEvent(
  db: Knex,
  event: {
    id: string; orgId: string; provider: string; deliveryId: string; bodySha256: string; eventType: string; correlationId: string; at: Date;
  },
): Promise<{ fresh: boolean; event: WebhookEventRecord }> {
  try {
    const rows = await db('provider_webhook_events').insert({
      id: event.id, org_id: event.orgId, provider: event.provider, delivery_id: event.deliveryId, body_sha256: event.bodySha256,
      event_type: event.eventType, correlation_id: event.correlationId, status: 'received', received_at: event.at,
    }).returning('*') as Row[];
    return { fresh: true, event: toRecord(rows[0]!) };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
  const existing = await db('provider_webhook_events')
    .where({ org_id: event.orgId, provider: event.provider })
    .andWhere((w) => w.where({ delivery_id: event.deliveryId }).orWhere({ body_sha256: event.bodySha256 }))
    .orderBy('received_at').first<Row | undefined>();
  if (!existing) throw new Error('webhook event vanished between its conflict and its read');
  return { fresh: false, event: toRecord(existing) };
}

/** Forgets a delivery that could not be handed on, so the provider's retry is accepted rather than a duplicate. */
export async function forgetWebhookEvent(db: Knex, id: string): Promise<void> {
  await db('provider_webhook_events').where({ id, status: 'received' }).delete();
}

export async function writeWebhookOutcome(
  trx: Knex, id: string, outcome: { status: WebhookEventStatus; outcome: Record<string, unknown>; sessionId: string | null; at: Date },
): Promise<void> {
  await trx('provider_webhook_events').where({ id }).update({
    status: outcome.status, outcome: JSON.stringify(outcome.outcome), session_id: outcome.sessionId, routed_at: outcome.at,
  });
}

export async function findWebhookEvent(db: Knex, orgId: string, id: string): Promise<WebhookEventRecord | undefined> {
  const row = await db('provider_webhook_events').where({ org_id: orgId, id }).first<Row | undefined>();
  return row ? toRecord(row) : undefined;
}
