import type { Denial } from '../../../storage/governance/authz-denials.js';
import type { AuthorizationResult, ResourceRef } from './ports.js';
import type { Principal } from './principal.js';

/** The denial `authorize` refused, as recorded; undefined for the platform admin, which belongs to no org. */
export function denialOf(principal: Principal, action: string, resource: ResourceRef, result: AuthorizationResult, at: number): Denial | undefined {
  if (principal.kind === 'admin') return undefined;
  const principalId = principal.kind === 'user' ? principal.userId
    : principal.kind === 'apiKey' ? principal.keyId
      : principal.kind === 'machine' ? principal.clientId : principal.workerId;
  return {
    orgId: principal.orgId, principalKind: principal.kind, principalId, action, resourceType: resource.type,
    determiningPolicies: result.determiningPolicies, evaluationError: result.errors.length > 0, at,
  };
}
