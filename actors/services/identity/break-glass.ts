import type { Knex } from 'knex';
import { appendAudit } from '../../../storage/audit-log.js';
import type { AuthorizationResult, ResourceRef } from './ports.js';
import type { Principal } from './principal.js';

/** The audit entry type of a break-glass allowance: a platform rule overrode the org's own policies. */
export const BREAK_GLASS_AUDIT_TYPE = 'authz.break_glass';

/**
 * The authorizer's `onBreakGlass` hook: one entry in the org's hash chain per use, written before the request goes
 * on, naming who, what, and which of the org's policies refused. A failed write refuses the request (the error
 * reaches the caller as 503), so the chain never misses a use.
 */
export function auditBreakGlass(db: Knex, now: () => number) {
  return async (principal: Principal, action: string, resource: ResourceRef, result: AuthorizationResult): Promise<void> => {
    if (principal.kind !== 'user') return;
    const [rule, ...refusedBy] = result.determiningPolicies;
    await appendAudit(db, {
      orgId: principal.orgId, type: BREAK_GLASS_AUDIT_TYPE, actor: principal.userId, subject: `${resource.type}:${resource.id}`,
      payload: { action, rule: rule ?? null, orgRole: principal.orgRole, refusedBy, errors: [...result.errors] },
      at: new Date(now()),
    });
  };
}
