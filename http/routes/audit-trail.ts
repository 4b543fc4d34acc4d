import type { Deps } from '../../actors/services/deps.js';

/**
 * Records an identity, key, login or session-control event in the org's audit chain (issue 20), through the audit
 * outbox: durable before the reply, in the chain moments later, never failing a change already made (decision
 * 0041). `actor` is `requesterOf(principal)` (`user:…`, `apiKey:…`, `admin`, …); payloads hold ids and names,
 * never a secret.
 */
export function auditTrail(
  deps: Deps, orgId: string, type: string, actor: string, subject: string | null, payload: Record<string, unknown> = {},
): Promise<void> {
  return deps.services.audit.recordOrLog({ orgId, type, actor, subject, payload, at: new Date(deps.clock.now()) });
}
