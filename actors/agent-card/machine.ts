import { accept, allows, reject, type Decision, type DecideContext, type Machine, type TransitionTable } from '../runtime/machine.js';
import { applyOverlay, missingTargets, normalizePayload, type AgentCardPayload, type Overlay } from '../marketplace/payload.js';
import type { SourceVersion } from '../marketplace/update-preview.js';
import type { InstallRecord, AgentCardRecord } from '../../schemas/agents/agent-card.js';
export { type InstallRecord, type AgentCardRecord } from '../../schemas/agents/agent-card.js';

/**
 * The agent-card actor (`agent-card/<id>`) owns one agent card of one org (decision 0015).
 *
 * Statuses:
 * - absent:    never created under this id.
 * - authored:  written by the org itself; every change of the payload appends an immutable version. It may be
 *              published as a marketplace listing (at most one per card; the listing follows the newest version).
 * - installed: materialized from a marketplace listing, pinned to one source version, with the org's overlay laid
 *              over it. It changes only by accepting a newer source version: re-pin, re-materialize, and drop the
 *              overlay keys whose targets vanished (each drop is audited in the same transaction).
 *
 * Source versions are read by the caller and carried in the message, so `decide` stays pure.
 */

export interface AgentCardState {
  readonly card: AgentCardRecord | null;
  readonly listingId: string | null;
}

type PayloadInput = Parameters<typeof normalizePayload>[0];

export type AgentCardMsg =
  | { readonly type: 'agentCard.create'; readonly orgId: string; readonly payload: PayloadInput; readonly by: string }
  | { readonly type: 'agentCard.update'; readonly orgId: string; readonly changes: Partial<PayloadInput>; readonly by: string }
  | { readonly type: 'agentCard.publish'; readonly orgId: string; readonly listingId: string; readonly by: string }
  | {
      readonly type: 'agentCard.install'; readonly orgId: string; readonly listingId: string; readonly sourceCardId: string;
      readonly source: SourceVersion; readonly overlay: Overlay; readonly by: string;
    }
  | { readonly type: 'agentCard.acceptUpdate'; readonly orgId: string; readonly source: SourceVersion; readonly by: string };

export type AgentCardMsgType = AgentCardMsg['type'];
export const agentCardMsgTypes = [
  'agentCard.create', 'agentCard.update', 'agentCard.publish', 'agentCard.install', 'agentCard.acceptUpdate',
] as const satisfies readonly AgentCardMsgType[];

export interface AgentCardReply {
  readonly card: AgentCardRecord;
  readonly listingId: string | null;
  /** Overlay keys dropped by an accepted update. */
  readonly dropped: readonly string[];
}

export type AgentCardEffect =
  | { readonly type: 'cardWritten'; readonly card: AgentCardRecord; readonly created: boolean; readonly by: string; readonly sourceVersion: number | null }
  | { readonly type: 'listingPublished'; readonly listingId: string; readonly cardId: string; readonly orgId: string; readonly by: string; readonly at: number }
  | {
      readonly type: 'overlayDropped'; readonly cardId: string; readonly orgId: string; readonly key: string; readonly value: unknown;
      readonly fromVersion: number; readonly toVersion: number; readonly by: string; readonly at: number;
    };

export const agentCardLifecycle = ['absent', 'authored', 'installed'] as const;
export type AgentCardLifecycle = (typeof agentCardLifecycle)[number];

export const transitions: TransitionTable<AgentCardLifecycle, AgentCardMsgType> = {
  absent: { 'agentCard.create': ['authored'], 'agentCard.install': ['installed'] },
  authored: { 'agentCard.update': ['authored'], 'agentCard.publish': ['authored'] },
  installed: { 'agentCard.acceptUpdate': ['installed'] },
};

export const initialAgentCardState = (): AgentCardState => ({ card: null, listingId: null });

export const lifecycleOf = (s: AgentCardState): AgentCardLifecycle => (s.card === null ? 'absent' : s.card.install ? 'installed' : 'authored');

type D = Decision<AgentCardState, AgentCardEffect, AgentCardReply>;

export function decideAgentCard(state: AgentCardState, msg: AgentCardMsg, ctx: DecideContext): D {
  const from = lifecycleOf(state);
  // Another org's card is indistinguishable from an absent one.
  if (state.card !== null && state.card.orgId !== msg.orgId) return reject('NOT_FOUND', 'agent card not found');
  if (!allows(transitions, from, msg.type)) {
    if (from === 'absent') return reject('NOT_FOUND', 'agent card not found');
    if (msg.type === 'agentCard.create' || msg.type === 'agentCard.install') return reject('ALREADY_EXISTS', 'an agent card with this id already exists');
    return reject('CONFLICT', from === 'installed'
      ? 'an installed card changes only by accepting a marketplace update'
      : 'this card was not installed from the marketplace', { from, msgType: msg.type });
  }
  switch (msg.type) {
    case 'agentCard.create': {
      const card: AgentCardRecord = {
        id: ctx.id, orgId: msg.orgId, version: 1, payload: normalizePayload(msg.payload), install: null,
        createdBy: msg.by, createdAt: ctx.now, updatedAt: ctx.now,
      };
      return accept({ card, listingId: null }, { card, listingId: null, dropped: [] }, [{ type: 'cardWritten', card, created: true, by: msg.by, sourceVersion: null }]);
    }
    case 'agentCard.update': {
      const current = state.card!;
      const payload = normalizePayload({ ...current.payload, ...definedOnly(msg.changes) } as PayloadInput);
      if (JSON.stringify(payload) === JSON.stringify(current.payload)) return accept(state, { card: current, listingId: state.listingId, dropped: [] });
      const card: AgentCardRecord = { ...current, payload, version: current.version + 1, updatedAt: ctx.now };
      return accept({ ...state, card }, { card, listingId: state.listingId, dropped: [] }, [{ type: 'cardWritten', card, created: false, by: msg.by, sourceVersion: null }]);
    }
    case 'agentCard.publish': {
      const card = state.card!;
      if (state.listingId !== null) return accept(state, { card, listingId: state.listingId, dropped: [] });
      return accept({ ...state, listingId: msg.listingId }, { card, listingId: msg.listingId, dropped: [] }, [
        { type: 'listingPublished', listingId: msg.listingId, cardId: card.id, orgId: card.orgId, by: msg.by, at: ctx.now },
      ]);
    }
    case 'agentCard.install': {
      const missing = missingTargets(msg.source.payload, msg.overlay);
      if (missing.length > 0) return reject('VALIDATION_FAILED', `overlay: no such field in the listed card: ${missing.join(', ')}`, { field: 'overlay', missing });
      const install: InstallRecord = { listingId: msg.listingId, sourceCardId: msg.sourceCardId, pinnedVersion: msg.source.version, overlay: msg.overlay };
      const card: AgentCardRecord = {
        id: ctx.id, orgId: msg.orgId, version: 1, payload: applyOverlay(msg.source.payload, msg.overlay), install,
        createdBy: msg.by, createdAt: ctx.now, updatedAt: ctx.now,
      };
      return accept({ card, listingId: null }, { card, listingId: null, dropped: [] }, [
        { type: 'cardWritten', card, created: true, by: msg.by, sourceVersion: msg.source.version },
      ]);
    }
    case 'agentCard.acceptUpdate': {
      const current = state.card!;
      const install = current.install!;
      if (msg.source.version <= install.pinnedVersion) {
        return reject('CONFLICT', `already pinned to version ${install.pinnedVersion}; no newer source version`, { pinnedVersion: install.pinnedVersion });
      }
      const dropped = missingTargets(msg.source.payload, install.overlay);
      const overlay = Object.fromEntries(Object.entries(install.overlay).filter(([key]) => !dropped.includes(key)));
      const card: AgentCardRecord = {
        ...current,
        version: current.version + 1,
        payload: applyOverlay(msg.source.payload, overlay),
        install: { ...install, pinnedVersion: msg.source.version, overlay },
        updatedAt: ctx.now,
      };
      const effects: AgentCardEffect[] = [
        { type: 'cardWritten', card, created: false, by: msg.by, sourceVersion: msg.source.version },
        ...dropped.map((key): AgentCardEffect => ({
          type: 'overlayDropped', cardId: card.id, orgId: card.orgId, key, value: install.overlay[key],
          fromVersion: install.pinnedVersion, toVersion: msg.source.version, by: msg.by, at: ctx.now,
        })),
      ];
      return accept({ ...state, card }, { card, listingId: null, dropped }, effects);
    }
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export const agentCardMachine: Machine<AgentCardState, AgentCardMsg, AgentCardEffect, AgentCardReply, AgentCardLifecycle> = {
  statuses: agentCardLifecycle, messageTypes: agentCardMsgTypes, transitions: transitions, statusOf: lifecycleOf, decide: decideAgentCard,
};
