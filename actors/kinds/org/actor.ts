import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { orgMessageSchema } from '../../../schemas/identity/org-actor.js';
import {
  markApiKeyRevoked, markRegistrationTokenRevoked, writeApiKey, writeRegistrationToken,
} from '../../../storage/identity/credentials.js';
import { tags } from '../../services/identity/revocation.js';
import { orgMachine, initialOrgState, type OrgEffect, type OrgMsg, type OrgReply, type OrgState } from './machine.js';

/**
 * Runs the org machine's effects: `project` writes the api_keys / registration_tokens read models in the snapshot
 * transaction; `afterPersist` announces revocations so every node's authenticator forgets the credential.
 */
export const ORG_KIND = 'org';

export interface OrgBehaviorPorts {
  /**
   * Publishes revocation tags on `identity.revoked` (normally `publishRevocation` bound to the transport).
   * The HTTP route publishes too, before it answers; this covers any other path that revokes.
   */
  readonly publishRevocation?: (revoked: readonly string[]) => Promise<void>;
}

export function createOrgBehavior(ports: OrgBehaviorPorts = {}): ActorBehavior<OrgState, OrgMsg, OrgReply, OrgEffect> {
  return {
    kind: ORG_KIND,
    initial: initialOrgState,
    machine: orgMachine,
    messages: orgMessageSchema,
    async project(trx: Knex.Transaction, orgId: string, _next: OrgState, _previous: OrgState, effects: readonly OrgEffect[]) {
      for (const effect of effects) {
        switch (effect.type) {
          case 'apiKeyIssued':
            await writeApiKey(trx, orgId, effect.key);
            break;
          case 'apiKeyRevoked':
            await markApiKeyRevoked(trx, orgId, effect.keyId, effect.revokedAt);
            break;
          case 'registrationTokenIssued':
            await writeRegistrationToken(trx, orgId, effect.token);
            break;
          case 'registrationTokenRevoked':
            await markRegistrationTokenRevoked(trx, orgId, effect.tokenId, effect.revokedAt);
            break;
        }
      }
    },
    async afterPersist(effects, ctx) {
      const revoked = effects.flatMap((e) =>
        e.type === 'apiKeyRevoked' ? [tags.apiKey(e.keyId)] : e.type === 'registrationTokenRevoked' ? [tags.registration(e.tokenId)] : []);
      if (revoked.length === 0 || !ports.publishRevocation) return;
      try {
        await ports.publishRevocation(revoked);
      } catch (err) {
        // The database already says revoked and memo entries expire within their TTL; log, do not crash the actor.
        ctx.log.warn({ err, revoked }, 'could not publish revocation');
      }
    },
  };
}
