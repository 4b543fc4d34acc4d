import { createHash, randomUUID } from 'node:crypto';
import type { Deps } from '../../deps.js';
import { TroupeError } from '../../../../ops/kernel/errors.js';
import { parseJsonBody } from '../../../../ops/kernel/json-text.js';
import { listProjects } from '../../../../storage/identity/orgs.js';
import type { ProviderIntegration } from '../../../../storage/integrations/provider-integrations.js';
import { forgetWebhookEvent, recordWebhookEvent } from '../../../../storage/integrations/webhook-events.js';
import { storeRouteMessage } from '../../../../storage/integrations/webhook-resend.js';
import { providerEventAddress } from './actor.js';
import type { ProviderEventMsg } from './machine.js';
import { isWebhookProvider, ProviderWebhookRefusal, schemes } from './providers.js';
import { accountIdsOf } from './account-ids.js';
import { claimingSigner, namedSigner } from './signing-org.js';
import { planRoute, type RouteAction } from './routing.js';
import { workflowRunsFor } from './workflow-triggers.js';
import { triggerBudgetRefusal } from '../../identity/request-limits.js';
import { findSession } from '../../../../storage/sessions/queries.js';

/**
 * The unified provider webhook (spec 4.7, 6.3; decisions 0014, 0025). Order of checks, each on the exact bytes
 * received:
 * 1. the provider is one of the four (404 otherwise); the edge has already capped the body (413) and checked that a
 *    `?org=` is a uuid (400);
 * 2. the source address has not had too many deliveries refused this minute (429, before any signature work);
 * 3. its signature header is present and well-formed (401);
 * 4. the orgs that may have signed it are found: the one `?org=` names, or else those that registered the provider
 *    account the delivery comes from (account-ids.ts; none is 401 at once, before any secret is opened);
 * 5. their secrets, and only theirs, are opened and checked in turn until one made the signature (401 when none
 *    did): one AES-GCM open and one HMAC per candidate — one with `?org=`, at most five without — whatever the
 *    number of orgs (decisions 0025, 0070);
 * 6. the signed body is UTF-8 JSON (400: validly signed garbage is the sender's bug) and carries the provider's
 *    delivery id (400); Linear's signed `webhookTimestamp` is within a minute (401);
 * 7. the delivery is recorded under (org, provider, delivery id) and (org, provider, SHA-256 of the body): a repeat
 *    of either answers `duplicate: true` with the first answer's ids and is not routed again (an unsigned delivery-id
 *    header does not make a replayed body new);
 * 8. what it asks for is planned: the runs of the org's published workflows whose webhook trigger matches it, or else
 *    the built-in routing (routing.ts);
 * 9. a fresh delivery is told to its `provider-event/<eventId>` actor; the 200 goes out only once the transport
 *    has accepted it (a broker confirm on RabbitMQ). If that fails the record is dropped, so the provider's retry
 *    is accepted, and the caller gets 503.
 * Refusals of 3–6 carry one generic message and count against the source (2); the reason goes to the log.
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
  /** The delivery URL's `?org=`: the one org whose secret is tried. Absent, the delivery's provider account decides. */
  readonly orgId: string | undefined;
  /** The sender's address: refused deliveries are counted per source. */
  readonly source: string;
  /** Becomes the correlation id, so the answer, the log line and the stored event share one id. */
  readonly requestId: string;
}

type IngestDeps = Pick<Deps, 'db' | 'secrets' | 'clock' | 'log' | 'transport'> & { readonly services: Pick<Deps['services'], 'rateLimits'> };

export { webhookSealContext } from './signing-org.js';

export async function receiveProviderWebhook(deps: IngestDeps, input: ProviderWebhookInput): Promise<ProviderWebhookResult> {
  if (!isWebhookProvider(input.provider)) throw new TroupeError('NOT_FOUND', 'unknown webhook provider');
  const provider = input.provider;
  if (input.rawBody.length > PROVIDER_WEBHOOK_MAX_BYTES) throw new TroupeError('HTTP_BODY_TOO_LARGE');
  const scheme = schemes[provider];

  const failures = deps.services.rateLimits.webhookFailures;
  await failures.assertOpen(input.source);
  let integration: ProviderIntegration;
  let body: Record<string, unknown>;
  const parsed = parsedOnce(input.rawBody);
  try {
    const signatures = scheme.signatures(input.headers);
    integration = input.orgId !== undefined
      ? await namedSigner(deps, provider, input.orgId, signatures, input.rawBody)
      : await claimingSigner(deps, provider, accountIdsOf(provider, input.headers, parsed.peek), signatures, input.rawBody);
    // Only a verified delivery counts against its org, before its body is used: nobody can spend another's budget.
    await deps.services.rateLimits.webhookDeliveries.consume(`org:${integration.orgId}`);
    body = parsed.take();
    scheme.assertFresh?.(body, deps.clock.now());
  } catch (err) {
    if (err instanceof ProviderWebhookRefusal) {
      deps.log.warn({ provider, reason: err.reason, reqId: input.requestId }, 'provider webhook refused');
      await failures.note(input.source);
      throw new TroupeError('AUTH_INVALID', 'webhook signature verification failed');
    }
    throw err;
  }

  const deliveryId = scheme.deliveryId(input.headers, body);
  if (deliveryId === undefined) throw new TroupeError('VALIDATION_FAILED', `the ${provider} delivery carries no delivery id`, { field: 'deliveryId' });
  const eventType = scheme.eventType(input.headers, body);
  const orgId = integration.orgId;

  const recorded = await recordWebhookEvent(deps.db, {
    id: randomUUID(), orgId, provider, deliveryId, bodySha256: createHash('sha256').update(input.rawBody).digest('hex'), eventType,
    correlationId: input.requestId, at: new Date(deps.clock.now()),
  });
  const answer = { ok: true as const, eventId: recorded.event.id, correlationId: recorded.event.correlationId };
  if (!recorded.fresh) return { ...answer, duplicate: true };

  // Published workflows whose webhook trigger matches take the delivery over from the built-in routing: the team
  // said what this event should run (decision 0027).
  // A delivery whose filter budget ran out before any match is not handed to the built-in routing either: a
  // workflow not considered might have claimed it.
  const triggered = await workflowRunsFor(deps.db, orgId, provider, eventType, body);
  if (triggered.cutOff !== undefined) deps.log.warn({ orgId, provider, eventId: recorded.event.id, reason: triggered.cutOff }, 'webhook trigger filters cut off');
  const overBudget = triggered.runs.length > 0 ? await triggerBudgetRefusal(deps.services.rateLimits, orgId, triggered.runs.length) : undefined;
  let action: RouteAction = overBudget !== undefined
    ? { kind: 'ignore', reason: overBudget }
    : triggered.runs.length > 0
    ? { kind: 'startRuns', runs: triggered.runs, input: body, ...(triggered.cutOff === undefined ? {} : { note: triggered.cutOff }) }
    : triggered.cutOff !== undefined ? { kind: 'ignore', reason: triggered.cutOff } : planRoute(orgId, provider, eventType, body);
  // A note for a session (a failed CI job) goes only to a session of the signing org; otherwise it is recorded as
  // ignored, so the outcome says why nothing was attached. (The actor's insert checks the org again.)
  if (action.kind === 'recordSessionActivity' && !(await findSession(deps.db, orgId, action.sessionId))) {
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

/**
 * The body parsed at most once: peeked at before verification to find the account it comes from (undefined when it
 * is not a JSON object), taken once verified (then a body that is not one is the sender's 400).
 */
function parsedOnce(raw: Buffer): { peek(): Record<string, unknown> | undefined; take(): Record<string, unknown> } {
  let outcome: { value: Record<string, unknown> } | { error: unknown } | undefined;
  const settle = () => {
    if (outcome === undefined) {
      try { outcome = { value: parseSignedBody(raw) }; } catch (error) { outcome = { error }; }
    }
    return outcome;
  };
  return {
    peek: () => { const o = settle(); return 'value' in o ? o.value : undefined; },
    take: () => { const o = settle(); if ('error' in o) throw o.error; return o.value; },
  };
}

function parseSignedBody(raw: Buffer): Record<string, unknown> {
  const value = parseJsonBody(raw);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TroupeError('VALIDATION_FAILED', 'a provider webhook body is a JSON object', { field: 'body' });
  }
  return value as Record<string, unknown>;
}
