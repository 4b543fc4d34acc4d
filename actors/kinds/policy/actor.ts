import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { policyMessageSchema } from '../../../schemas/governance/policy.js';
import { appendAudit } from '../../../storage/audit-log.js';
import { appendPolicyVersion, writePolicy } from '../../../storage/governance/policies.js';
import { policyMachine, initialPolicyState, type PolicyEffect, type PolicyMsg, type PolicyReply, type PolicyState } from './machine.js';

/**
 * Runs the policy machine's effects. Everything happens in `project`, inside the snapshot transaction: the
 * `policies` row, the appended `policy_versions` row and the org's audit entry commit together or not at all, so
 * the history a reader sees and the audit chain never disagree with the actor's state.
 */
export const POLICY_KIND = 'policy';
export const policyAddress = (policyId: string): string => `${POLICY_KIND}/${policyId}`;

export function createPolicyBehavior(): ActorBehavior<PolicyState, PolicyMsg, PolicyReply, PolicyEffect> {
  return {
    kind: POLICY_KIND,
    initial: initialPolicyState,
    machine: policyMachine,
    messages: policyMessageSchema,
    async project(trx: Knex.Transaction, _id: string, _next: PolicyState, _previous: PolicyState, effects: readonly PolicyEffect[]) {
      for (const effect of effects) {
        switch (effect.type) {
          case 'policyWritten': {
            const p = effect.policy;
            await writePolicy(trx, p);
            const type = effect.previousStatus === null ? 'policy.created'
              : p.status === 'archived' && effect.previousStatus !== 'archived' ? 'policy.archived' : 'policy.updated';
            await appendAudit(trx, {
              orgId: p.orgId, type, actor: effect.by,
              subject: p.id, payload: { version: p.version, status: p.status, previousStatus: effect.previousStatus, name: p.name },
              at: new Date(p.updatedAt),
            });
            break;
          }
          case 'versionAppended': {
            const owner = effects.find((e) => e.type === 'policyWritten');
            if (owner?.type !== 'policyWritten') break;
            await appendPolicyVersion(trx, owner.policy.orgId, effect.version);
            await appendAudit(trx, {
              orgId: owner.policy.orgId, type: 'policy.version_created', actor: effect.version.changedBy,
              subject: effect.version.policyId,
              payload: { version: effect.version.version, changeReason: effect.version.changeReason.slice(0, 500) },
              at: new Date(effect.version.createdAt),
            });
            break;
          }
        }
      }
    },
  };
}

