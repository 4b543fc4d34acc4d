import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { proposalMessageSchema } from '../../../schemas/authoring/proposal.js';
import { appendAudit } from '../../../storage/audit-log.js';
import { writeProposalVersion } from '../../../storage/authoring/proposals.js';
import { proposalMachine, initialProposalState, type ProposalEffect, type ProposalMsg, type ProposalReply, type ProposalState } from './proposal-machine.js';

/**
 * Runs the proposal machine's effects, all inside the snapshot transaction: the head row, the appended immutable
 * version and the org's `proposal.version_created` audit entry commit together or not at all. There is no outbox in
 * storage yet, and committing the audit entry with the version is the stronger guarantee, so an apply answers
 * `auditPending: false` (ops/decisions/0011-authoring.md).
 */
export const PROPOSAL_KIND = 'proposal';
export const proposalAddress = (proposalId: string): string => `${PROPOSAL_KIND}/${proposalId}`;

export function createProposalBehavior(): ActorBehavior<ProposalState, ProposalMsg, ProposalReply, ProposalEffect> {
  return {
    kind: PROPOSAL_KIND,
    initial: initialProposalState,
    machine: proposalMachine,
    messages: proposalMessageSchema,
    async project(trx: Knex.Transaction, _id: string, _next: ProposalState, _previous: ProposalState, effects: readonly ProposalEffect[]) {
      for (const effect of effects) {
        await writeProposalVersion(trx, effect.proposal, effect.version);
        await appendAudit(trx, {
          orgId: effect.proposal.orgId, type: 'proposal.version_created', actor: effect.version.createdBy, subject: effect.proposal.id,
          payload: {
            projectId: effect.proposal.projectId, target: effect.proposal.target, workflowId: effect.proposal.workflowId,
            version: effect.version.version, candidateDigest: effect.version.digests.candidateDigest,
          },
          at: new Date(effect.version.createdAt),
        });
      }
    },
  };
}
