import type { Deps } from '../deps.js';
import { parseJsonBody } from '../../../ops/kernel/json-text.js';
import { appendAudit } from '../../../storage/audit-log.js';
import { connectedIncidentIo, incidentIoConnectionOf, recordDelivery } from '../../../storage/governance/incidents.js';
import { incidentAddress, incidentIdFor } from '../../kinds/incident/actor.js';
import type { IncidentMsg, IncidentReply } from '../../kinds/incident/machine.js';
import { mapIncidentEvent } from './incident-io-events.js';
import {
  assertFresh, parseSignedHeaders, REPLAY_WINDOW_SECONDS, secretKey, signedBy, WebhookRefusal, type SignedHeaders,
} from './standard-webhooks.js';

/**
 * The incident.io ingest (spec 4.7, 5.6, 7, 8; decisions 0009, 0025). Order of checks:
 * 1. the source address has not had too many deliveries refused this minute (429, before any signature work);
 * 2. size (the edge already stopped reading past the cap; this is the same limit, for callers without the edge);
 * 3. headers well-formed (`webhook-timestamp` digits only, `v1,<base64>` signatures);
 * 4. which org signed it. A delivery URL that names its org (`?org=`, as the connect route hands out) is checked
 *    against that org's secret only (its own, or the legacy environment secret if the platform admin gave it that).
 *    A URL without one (the spec's bare path) makes us search: every connected per-org secret is tried and exactly
 *    one must match, then the legacy secret for the one environment-only row; that search is refused outright once
 *    more than UNROUTED_SEARCH_LIMIT orgs hold secrets, so a delivery never costs more than that many HMACs;
 * 5. timestamp within five minutes of our clock (checked after the org is known, so the refusal lands in its audit);
 * 6. the webhook id not seen before in that org (replay store in the database, shared by all nodes);
 * 7. strict UTF-8 and JSON, then the event.
 * Every refusal of 2–6 is 401 and counts against the source; a body that is validly signed but not UTF-8 or JSON is
 * the sender's bug: 400.
 */
export const INCIDENT_IO_PROVIDER = 'incident-io';
export const INCIDENT_WEBHOOK_MAX_BYTES = 1024 * 1024;
export const sealContext = (orgId: string): string => `${orgId}:${INCIDENT_IO_PROVIDER}`;

export type IncidentWebhookResult =
  | { ok: true; skipped: true; event_type: string }
  | { ok: true; created: boolean; updated: boolean; resolved: boolean; event_type: string; incidentId: string };

/** Without `?org=`, deliveries are searched for among at most this many orgs' secrets (HMACs per delivery). */
export const UNROUTED_SEARCH_LIMIT = 16;

export interface WebhookInput {
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly rawBody: Buffer;
  /** The delivery URL's `?org=`, when it names one: only that org's secret is tried. */
  readonly orgId?: string | undefined;
  /** The sender's address: refused deliveries are counted per source. */
  readonly source?: string;
}

type WebhookDeps = Pick<Deps, 'db' | 'secrets' | 'clock' | 'config' | 'log' | 'ask'> & { readonly services: Pick<Deps['services'], 'rateLimits'> };

export async function receiveIncidentIoWebhook(deps: WebhookDeps, input: WebhookInput): Promise<IncidentWebhookResult> {
  const failures = deps.services.rateLimits.webhookFailures;
  const source = input.source ?? 'unknown';
  await failures.assertOpen(source);
  try {
    return await receive(deps, input);
  } catch (err) {
    if (err instanceof WebhookRefusal) await failures.note(source);
    throw err;
  }
}

async function receive(deps: WebhookDeps, input: WebhookInput): Promise<IncidentWebhookResult> {
  let orgId: string | undefined;
  let headers: SignedHeaders | undefined;
  try {
    if (input.rawBody.length > INCIDENT_WEBHOOK_MAX_BYTES) throw new WebhookRefusal('oversize');
    headers = parseSignedHeaders(input.headers);
    orgId = input.orgId !== undefined
      ? await namedOrg(deps, input.orgId, headers, input.rawBody)
      : await signingOrg(deps, headers, input.rawBody);
    assertFresh(headers.timestamp, deps.clock.now());
  } catch (err) {
    if (err instanceof WebhookRefusal) await refuse(deps, err, orgId, headers);
    throw err;
  }

  const body = parseJsonBody(input.rawBody);
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
    await deps.db('webhook_deliveries').where({ provider: INCIDENT_IO_PROVIDER, org_id: orgId, webhook_id: headers.id }).delete()
      .catch((cause: unknown) => deps.log.warn({ err: cause }, 'could not release webhook id after a failed delivery'));
    throw err;
  }
}

/** The org the URL names, when its secret (or the environment secret it was given) signed this delivery. */
async function namedOrg(deps: WebhookDeps, orgId: string, headers: SignedHeaders, body: Buffer): Promise<string> {
  const connection = await incidentIoConnectionOf(deps.db, orgId);
  if (!connection) throw new WebhookRefusal('no-matching-secret');
  let key: Buffer | undefined;
  if (connection.sealedSecret === null) {
    key = deps.config.incidentIoSecret === undefined ? undefined : secretKey(deps.config.incidentIoSecret);
  } else {
    try {
      key = secretKey(deps.secrets.open(connection.sealedSecret, sealContext(orgId)));
    } catch {
      throw new WebhookRefusal('undecryptable-secret');
    }
  }
  if (!key || !signedBy(key, headers, body)) throw new WebhookRefusal('no-matching-secret');
  return orgId;
}

/** The one org whose secret signed a delivery whose URL names none; throws WebhookRefusal otherwise. */
async function signingOrg(deps: WebhookDeps, headers: SignedHeaders, body: Buffer): Promise<string> {
  const connections = await connectedIncidentIo(deps.db);
  if (connections.filter((c) => c.sealedSecret !== null).length > UNROUTED_SEARCH_LIMIT) {
    deps.log.warn({ limit: UNROUTED_SEARCH_LIMIT }, 'incident.io delivery without ?org= refused: too many orgs to search; use the URL the connect route gives');
    throw new WebhookRefusal('unrouted');
  }
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

  // The legacy environment secret: only for the one connected environment-only row (the platform admin's choice,
  // and the database allows no second), never for per-org rows.
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
