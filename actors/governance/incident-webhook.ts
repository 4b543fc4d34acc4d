import type { Deps } from '../deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { decodeUtf8 } from '../../ops/kernel/utf8.js';
import { appendAudit } from '../../storage/audit-log.js';
import { connectedIncidentIo, recordDelivery } from '../../storage/governance/incidents.js';
import { incidentAddress, incidentIdFor } from '../incident/actor.js';
import type { IncidentMsg, IncidentReply } from '../incident/machine.js';
import { mapIncidentEvent } from './incident-io-events.js';
import {
  assertFresh, parseSignedHeaders, REPLAY_WINDOW_SECONDS, secretKey, signedBy, WebhookRefusal, type SignedHeaders,
} from './standard-webhooks.js';

/**
 * The incident.io ingest (spec 4.7, 5.6, 7, 8; decision 0009). Order of checks:
 * 1. size (the edge already stopped reading past the cap; this is the same limit, for callers without the edge);
 * 2. headers well-formed (`webhook-timestamp` digits only, `v1,<base64>` signatures);
 * 3. which org signed it: every connected per-org secret is opened and tried; exactly one must match. Only when
 *    none does is the legacy environment secret tried, and only for exactly one connected environment-only row;
 * 4. timestamp within five minutes of our clock (checked after the org is known, so the refusal lands in its audit);
 * 5. the webhook id not seen before (replay store in the database, shared by all nodes);
 * 6. strict UTF-8 and JSON, then the event.
 * Every refusal of 1–5 is 401; a body that is validly signed but not UTF-8 or JSON is the sender's bug: 400.
 */
export const INCIDENT_IO_PROVIDER = 'incident-io';
export const INCIDENT_WEBHOOK_MAX_BYTES = 1024 * 1024;
export const sealContext = (orgId: string): string => `${orgId}:${INCIDENT_IO_PROVIDER}`;

export type IncidentWebhookResult =
  | { ok: true; skipped: true; event_type: string }
  | { ok: true; created: boolean; updated: boolean; resolved: boolean; event_type: string; incidentId: string };

export interface WebhookInput {
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly rawBody: Buffer;
}

type WebhookDeps = Pick<Deps, 'db' | 'secrets' | 'clock' | 'config' | 'log' | 'ask'>;

export async function receiveIncidentIoWebhook(deps: WebhookDeps, input: WebhookInput): Promise<IncidentWebhookResult> {
  let orgId: string | undefined;
  let headers: SignedHeaders | undefined;
  try {
    if (input.rawBody.length > INCIDENT_WEBHOOK_MAX_BYTES) throw new WebhookRefusal('oversize');
    headers = parseSignedHeaders(input.headers);
    orgId = await signingOrg(deps, headers, input.rawBody);
    assertFresh(headers.timestamp, deps.clock.now());
  } catch (err) {
    if (err instanceof WebhookRefusal) await refuse(deps, err, orgId, headers);
    throw err;
  }

  let body: unknown;
  try {
    body = JSON.parse(decodeUtf8(input.rawBody));
  } catch (err) {
    if (err instanceof TroupeError) throw err;
    throw new TroupeError('HTTP_BAD_JSON');
  }
  const event = mapIncidentEvent(body);

  const now = deps.clock.now();
  const fresh = await recordDelivery(deps.db, {
    provider: INCIDENT_IO_PROVIDER, webhookId: headers.id, orgId, at: now,
    // Twice the window: a delivery stamped at the far edge of the window stays recognisable until it is stale.
    pruneBeforeMs: now - 2 * REPLAY_WINDOW_SECONDS * 1000,
  });
  if (!fresh) {
    const replay = new WebhookRefusal('replayed');
    await refuse(deps, replay, orgId, headers);
    throw replay;
  }

  const eventType = (body as { event_type: string }).event_type;
  if (!event) return { ok: true, skipped: true, event_type: eventType };
  const incidentId = incidentIdFor(orgId, INCIDENT_IO_PROVIDER, event.externalId);
  const message: IncidentMsg = {
    type: 'incident.record', orgId, source: INCIDENT_IO_PROVIDER, externalId: event.externalId, change: event.change, fields: event.fields,
  };
  try {
    const reply = await deps.ask<IncidentReply>(incidentAddress(incidentId), message);
    return { ok: true, created: reply.created, updated: reply.updated, resolved: reply.resolved, event_type: eventType, incidentId: reply.incidentId };
  } catch (err) {
    // The delivery was not processed: forget its id so the provider's retry is not refused as a replay.
    await deps.db('webhook_deliveries').where({ provider: INCIDENT_IO_PROVIDER, webhook_id: headers.id }).delete()
      .catch((cause: unknown) => deps.log.warn({ err: cause }, 'could not release webhook id after a failed delivery'));
    throw err;
  }
}

/** The one org whose secret signed this delivery; throws WebhookRefusal otherwise. */
async function signingOrg(deps: WebhookDeps, headers: SignedHeaders, body: Buffer): Promise<string> {
  const connections = await connectedIncidentIo(deps.db);
  const matches: string[] = [];
  let undecryptable = 0;
  for (const c of connections) {
    if (c.sealedSecret === null) continue;
    let key: Buffer | undefined;
    try {
      key = secretKey(deps.secrets.open(c.sealedSecret, sealContext(c.orgId)));
    } catch {
      key = undefined;
    }
    if (!key) {
      undecryptable += 1;
      continue;
    }
    if (signedBy(key, headers, body)) matches.push(c.orgId);
  }
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) throw new WebhookRefusal('ambiguous-secret');

  // The legacy environment secret: only for exactly one connected environment-only row, never for per-org rows.
  const legacy = deps.config.incidentIoSecret === undefined ? undefined : secretKey(deps.config.incidentIoSecret);
  const environmentRows = connections.filter((c) => c.sealedSecret === null);
  if (legacy && environmentRows.length === 1 && signedBy(legacy, headers, body)) return environmentRows[0]!.orgId;
  throw new WebhookRefusal(undecryptable > 0 ? 'undecryptable-secret' : 'no-matching-secret');
}

/** Logs every refusal; one attributable to an org (its secret signed the delivery) also goes into its audit chain. */
async function refuse(deps: WebhookDeps, refusal: WebhookRefusal, orgId: string | undefined, headers: SignedHeaders | undefined): Promise<void> {
  deps.log.warn({ provider: INCIDENT_IO_PROVIDER, reason: refusal.reason, orgId }, 'webhook refused');
  if (orgId === undefined) return;
  await appendAudit(deps.db, {
    orgId, type: 'incident.webhook_rejected', actor: `webhook:${INCIDENT_IO_PROVIDER}`, subject: headers?.id.slice(0, 256) ?? null,
    payload: { reason: refusal.reason },
    at: new Date(deps.clock.now()),
  }).catch((err: unknown) => deps.log.warn({ err }, 'could not audit a webhook refusal'));
}
