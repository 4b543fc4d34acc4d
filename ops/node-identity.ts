import type { Knex } from 'knex';
import type { Clock } from './kernel/clock.js';
import type { Logger } from './kernel/logger.js';
import type { Secrets } from './kernel/secrets.js';
import type { Transport } from '../transport/port.js';
import { createAuthenticator, type IdentityAuthenticator } from '../actors/services/identity/authenticator.js';
import { createAuthorizer, type CedarAuthorizer } from '../actors/services/identity/authorizer.js';
import { DenialRecorder } from '../storage/governance/authz-denials.js';
import { denialOf } from '../actors/services/identity/denials.js';
import { auditBreakGlass } from '../actors/services/identity/break-glass.js';
import { deriveSigningKeys, type SigningKeys } from '../actors/services/identity/tokens.js';
import { projectRoleOf } from '../storage/identity/orgs.js';
import { StoredPolicySource } from '../actors/kinds/policy/enforcement.js';

/** Who a caller is and what they may do: the node's signing keys, its authenticator and its Cedar authorizer. */
export interface NodeIdentity {
  readonly keys: SigningKeys;
  readonly auth: IdentityAuthenticator;
  readonly authz: CedarAuthorizer;
  readonly storedPolicies: StoredPolicySource;
  readonly denials: DenialRecorder;
}

export function createIdentity(
  ports: { readonly db: Knex; readonly transport: Transport; readonly secrets: Secrets; readonly clock: Clock; readonly log: Logger },
): NodeIdentity {
  const { db, transport, clock, log } = ports;
  const keys = deriveSigningKeys(ports.secrets);
  const auth = createAuthenticator({ db, keys, clock, transport, log });
  // Governance (decision 0009): an org's active stored policies join the defaults in every decision; an erroring
  // statement denies (the authorizer fails closed on evaluation errors) and decisions name the stored policy.
  const storedPolicies = new StoredPolicySource(db, clock);
  // Refusals are buffered and written in batches off the request path (decision 0009 "Recorded denials").
  const denials = new DenialRecorder(db, { clock, onError: (err) => log.warn({ err }, 'could not record authorization denials') });
  const authz = createAuthorizer({
    projectRoleOf: (orgId, userId, projectId) => projectRoleOf(db, orgId, projectId, userId),
    extraPolicies: (orgId, projectId) => storedPolicies.textFor(orgId, projectId),
    onDenied: (principal, action, resource, result) => {
      const denial = denialOf(principal, action, resource, result, clock.now());
      if (denial) denials.record(denial);
    },
    onBreakGlass: auditBreakGlass(db, () => clock.now()),
    transport, clock, log,
  });
  return { keys, auth, authz, storedPolicies, denials };
}
