import { randomUUID } from 'node:crypto';
import type { Deps } from '../../deps.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { decodeUtf8 } from '../../../ops/kernel/utf8.js';
import { listProjects } from '../../../storage/identity/orgs.js';
import { candidateIntegrations, type ProviderIntegration } from '../../../storage/integrations/provider-integrations.js';
import { forgetWebhookEvent, recordWebhookEvent } from '../../../storage/integrations/webhook-events.js';
import { storeRouteMessage } from '../../../storage/integrations/webhook-resend.js';
import { providerEventAddress } from './actor.js';
import type { ProviderEventMsg } from './machine.js';
import { isWebhookProvider, ProviderWebhookRefusal, schemes, signedWith, type WebhookProvider } from './providers.js';
import { planRoute } from './routing.js';
import { sessionScope } from '../../../storage/sessions/queries.js';

/**
 * The unified provider webhook (spec 4.7, 6.3; decision 0014). Order of checks, each on the exact bytes received:
 * 1. the provider is one of the four (404 otherwise); the edge has already capped the body (413);
 * 2. its signature header is present and well-formed (401);
 * 3. which org signed it: the secret of every org connected to that provider, or only the hinted org's, is opened
 *    and tried; exactly one must match (401) — O(connected orgs) AES-GCM opens and HMACs per delivery;
 * 4. the signed body is UTF-8 JSON (400: validly signed garbage is the sender's bug) and carries the provider's
 *    delivery id (400); Linear's signed `webhookTimestamp` is within a minute (401);
 * 5. the delivery is recorded under (org, provider, delivery id): a repeat answers `duplicate: true` with the first
 *    answer's ids and is not routed again;
 * 6. a fresh delivery is told to its `provider-event/<eventId>` actor; the 200 goes out only once the transport
 *    has accepted it (a broker confirm on RabbitMQ). If that fails the record is dropped, so the provider's retry
 *    is accepted, and the caller gets 503.
 * Refusals of 2–4 carry one generic message; the reason goes to the log.
 */
export const PROVIDER_WEBHOOK_MAX_BYTES = 1024 * 1024;

export interface ProviderWebhookResult {
  readonly ok: true;
  readonly eventId: string;
  readonly correlationId: string;
  readonly duplicate: boolean;
}

export interface ProviderWebhookInput {
  readonly provider: string;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly rawBody: Buffer;
  /** Optional `?org=` of the delivery URL: only that org's secret is tried. */
  readonly orgHint: string | undefined;
  /** Becomes the correlation id, so the answer, the log line and the stored event share one id. */
  readonly requestId: string;
}

type IngestDeps = Pick<Deps, 'db' | 'secrets' | 'clock' | 'log' | 'transport'>;

export const webhookSealContext = (orgId: string, provider: WebhookProvider): string => `${orgId}:webhook:${provider}`;

export async function receiveProviderWebhook(deps: IngestDeps, input: ProviderWebhookInput): Promise<ProviderWebhookResult> {
  if (!isWebhookProvider(input.provider)) throw new TroupeError('NOT_FOUND', 'unknown webhook provider');
  const provider = input.provider;
  if (input.rawBody.length > PROVIDER_WEBHOOK_MAX_BYTES) throw new TroupeError('HTTP_BODY_TOO_LARGE');
  const scheme = schemes[provider];

  let integration: ProviderIntegration;
  let body: Record<string, unknown>;
  try {
    const signatures = scheme.signatures(input.headers);
    integration = await signingIntegration(deps, provider, input.orgHint, signatures, input.rawBody);
    body = parseSignedBody(input.rawBody);
    scheme.assertFresh?.(body, deps.clock.now());
  } catch (err) {
    if (err instanceof ProviderWebhookRefusal) {
      deps.log.warn({ provider, reason: err.reason, reqId: input.requestId }, 'provider webhook refused');
      throw new TroupeError('AUTH_INVALID', 'webhook signature verification failed');
    }
    throw err;
  }

  const deliveryId = scheme.deliveryId(input.headers, body);
  if (deliveryId === undefined) throw new TroupeError('VALIDATION_FAILED', `the ${provider} delivery carries no delivery id`, { field: 'deliveryId' });
  const eventType = scheme.eventType(input.headers, body);
  const orgId = integration.orgId;

  const recorded = await recordWebhookEvent(deps.db, {
    id: randomUUID(), orgId, provider, deliveryId, eventType, correlationId: input.requestId, at: new Date(deps.clock.now()),
  });
  const answer = { ok: true as const, eventId: recorded.event.id, correlationId: recorded.event.correlationId };
  if (!recorded.fresh) return { ...answer, duplicate: true };

  let action = planRoute(orgId, provider, eventType, body);
  // A note for a session (a failed CI job) goes only to a session of the signing org; otherwise it is recorded as
  // ignored, so the outcome says why nothing was attached. (The actor's insert checks the org again.)
  if (action.kind === 'recordSessionActivity' && !(await sessionScope(deps.db, orgId, action.sessionId))) {
    action = { kind: 'ignore', reason: `no session ${action.sessionId} in this org` };
  }
  const message: ProviderEventMsg = {
    type: 'providerEvent.route', orgId, provider, eventType,
    projectId: integration.projectId ?? (await listProjects(deps.db, orgId))[0]?.id ?? null,
    action,
  };
  try {
    // Kept with the delivery, so the sweeper can hand it on again if this hand-off or its routing never finishes.
    await storeRouteMessage(deps.db, recorded.event.id, message);
    await deps.transport.tell(providerEventAddress(recorded.event.id), message);
  } catch (err) {
    await forgetWebhookEvent(deps.db, recorded.event.id)
      .catch((cause: unknown) => deps.log.warn({ err: cause }, 'could not release a webhook delivery after a failed hand-off'));
    throw err instanceof TroupeError ? err : new TroupeError('TRANSPORT_UNAVAILABLE');
  }
  return { ...answer, duplicate: false };
}

/** The one connected org whose secret made one of `signatures`; throws ProviderWebhookRefusal otherwise. */
async function signingIntegration(
  deps: IngestDeps, provider: WebhookProvider, orgHint: string | undefined, signatures: Buffer[], body: Buffer,
): Promise<ProviderIntegration> {
  const candidates = await candidateIntegrations(deps.db, provider, orgHint);
  const matches: ProviderIntegration[] = [];
  for (const c of candidates) {
    let secret: string;
    try {
      secret = deps.secrets.open(c.sealedSecret, webhookSealContext(c.orgId, provider));
    } catch {
      deps.log.error({ orgId: c.orgId, provider }, 'a webhook secret could not be opened (master key changed?)');
      continue;
    }
    if (signedWith(provider, secret, signatures, body)) matches.push(c);
  }
  if (matches.length === 1) return matches[0]!;
  throw new ProviderWebhookRefusal(matches.length > 1 ? 'ambiguous-secret' : 'no-matching-secret');
}

function parseSignedBody(raw: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(decodeUtf8(raw));
  } catch (err) {
    if (err instanceof TroupeError) throw err;
    throw new TroupeError('HTTP_BAD_JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TroupeError('VALIDATION_FAILED', 'a provider webhook body is a JSON object', { field: 'body' });
  }
  return value as Record<string, unknown>;
}
