import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { agentCardMessageSchema } from '../../../schemas/agents/agent-card.js';
import { appendAudit } from '../../../storage/audit-log.js';
import { appendCardVersion, insertListing, writeCard } from '../../../storage/agent-cards/cards.js';
import { agentCardMachine, initialAgentCardState, type AgentCardEffect, type AgentCardMsg, type AgentCardReply, type AgentCardState } from './machine.js';

/**
 * Runs the agent-card machine's effects, all in `project`, inside the snapshot transaction: the card row, its new
 * version, a listing, and the audit entries (one per dropped overlay key on an accepted update) commit together
 * or not at all. That is what makes accepting a marketplace update transactional.
 */
export const AGENT_CARD_KIND = 'agent-card';
export const agentCardAddress = (id: string): string => `${AGENT_CARD_KIND}/${id}`;

/** Overlay values are the org's own data of any size; the audit entry keeps a bounded rendering of it. */
const AUDITED_VALUE_CHARS = 2000;
const auditable = (value: unknown): string => (JSON.stringify(value) ?? 'null').slice(0, AUDITED_VALUE_CHARS);

export function createAgentCardBehavior(): ActorBehavior<AgentCardState, AgentCardMsg, AgentCardReply, AgentCardEffect> {
  return {
    kind: AGENT_CARD_KIND,
    initial: initialAgentCardState,
    machine: agentCardMachine,
    messages: agentCardMessageSchema,
    async project(trx: Knex.Transaction, _id, _next, _previous, effects) {
      for (const effect of effects) {
        switch (effect.type) {
          case 'cardWritten': {
            const { card } = effect;
            await writeCard(trx, card);
            await appendCardVersion(trx, card, effect.by, effect.sourceVersion);
            const type = effect.created ? (card.install ? 'agent_card.installed' : 'agent_card.created')
              : card.install ? 'agent_card.update_accepted' : 'agent_card.version_created';
            await appendAudit(trx, {
              orgId: card.orgId, type, actor: effect.by, subject: card.id, at: new Date(card.updatedAt),
              payload: { version: card.version, ...(card.install ? { listingId: card.install.listingId, pinnedVersion: card.install.pinnedVersion } : {}) },
            });
            break;
          }
          case 'listingPublished':
            await insertListing(trx, { id: effect.listingId, orgId: effect.orgId, cardId: effect.cardId, by: effect.by, at: effect.at, quota: effect.quota });
            await appendAudit(trx, {
              orgId: effect.orgId, type: 'marketplace.listing_published', actor: effect.by, subject: effect.cardId,
              payload: { listingId: effect.listingId }, at: new Date(effect.at),
            });
            break;
          case 'overlayDropped':
            await appendAudit(trx, {
              orgId: effect.orgId, type: 'agent_card.overlay_field_dropped', actor: effect.by, subject: effect.cardId, at: new Date(effect.at),
              payload: { key: effect.key, value: auditable(effect.value), fromVersion: effect.fromVersion, toVersion: effect.toVersion, reason: 'target vanished' },
            });
            break;
        }
      }
    },
  };
}
