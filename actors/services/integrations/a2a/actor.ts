import { createHash } from 'node:crypto';
import type { ActorBehavior } from '../../../runtime/machine.js';
import { externalAgentMessageSchema } from '../../../../schemas/agents/external-agent.js';
import { appendAudit } from '../../../../storage/audit-log.js';
import { writeExternalAgent } from '../../../../storage/integrations/a2a.js';
import {
  externalAgentMachine, initialExternalAgentState, type ExternalAgentEffect, type ExternalAgentMsg, type ExternalAgentReply, type ExternalAgentState,
} from './machine.js';

/** Projects the external agent row and its audit entries in the snapshot transaction. */
export const EXTERNAL_AGENT_KIND = 'external-agent';
export const externalAgentAddress = (id: string): string => `${EXTERNAL_AGENT_KIND}/${id}`;

/** One actor per (org, normalized URL): a second registration of the same agent meets the first. */
export function externalAgentId(orgId: string, url: string): string {
  const h = createHash('sha256').update(`${orgId}\n${url}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h.slice(16, 17), 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export function createExternalAgentBehavior(): ActorBehavior<ExternalAgentState, ExternalAgentMsg, ExternalAgentReply, ExternalAgentEffect> {
  return {
    kind: EXTERNAL_AGENT_KIND,
    initial: initialExternalAgentState,
    machine: externalAgentMachine,
    messages: externalAgentMessageSchema,
    async project(trx, _id, _next, _previous, effects) {
      for (const effect of effects) {
        await writeExternalAgent(trx, effect.agent);
        if (effect.audit) {
          await appendAudit(trx, {
            orgId: effect.agent.orgId, type: effect.audit.type, actor: effect.audit.by, subject: effect.agent.id,
            payload: effect.audit.payload, at: new Date(effect.agent.updatedAt),
          });
        }
      }
    },
  };
}
