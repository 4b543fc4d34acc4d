import { accept, reject } from '../../runtime/machine.js';
import { defineMachine, go, type Take } from '../../runtime/define-machine.js';
import { applyOverlay, missingTargets, normalizePayload, type AgentCardPayload, type Overlay } from '../../services/marketplace/payload.js';
import type { SourceVersion } from '../../services/marketplace/update-preview.js';
import type { InstallRecord, AgentCardRecord } from '../../../schemas/agents/agent-card.js';
export { type InstallRecord, type AgentCardRecord } from '../../../schemas/agents/agent-card.js';

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
  /** `quota`: listings the org may have at most (decision 0026); the projection enforces it under a per-org lock. */
  | { readonly type: 'agentCard.publish'; readonly orgId: string; readonly listingId: string; readonly by: string; readonly quota: number }
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
  | {
      readonly type: 'listingPublished'; readonly listingId: string; readonly cardId: string; readonly orgId: string; readonly by: string;
      readonly at: number; readonly quota: number;
    }
  | {
      readonly type: 'overlayDropped'; readonly cardId: string; readonly orgId: string; readonly key: string; readonly value: unknown;
      readonly fromVersion: number; readonly toVersion: number; readonly by: string; readonly at: number;
    };

export const agentCardLifecycle = ['absent', 'authored', 'installed'] as const;
export type AgentCardLifecycle = (typeof agentCardLifecycle)[number];

export const initialAgentCardState = (): AgentCardState => ({ card: null, listingId: null });

export const lifecycleOf = (s: AgentCardState): AgentCardLifecycle => (s.card === null ? 'absent' : s.card.install ? 'installed' : 'authored');

type On<T extends AgentCardMsgType> =
  Take<AgentCardState, Extract<AgentCardMsg, { type: T }>, AgentCardEffect, AgentCardReply, AgentCardLifecycle, AgentCardLifecycle>;

const create: On<'agentCard.create'> = (_state, msg, ctx) => {
  const card: AgentCardRecord = {
    id: ctx.id, orgId: msg.orgId, version: 1, payload: normalizePayload(msg.payload), install: null,
    createdBy: msg.by, createdAt: ctx.now, updatedAt: ctx.now,
  };
  return accept({ card, listingId: null }, { card, listingId: null, dropped: [] }, [{ type: 'cardWritten', card, created: true, by: msg.by, sourceVersion: null }]);
};

/** Every change of the payload appends a version; an edit that changes nothing keeps the card as it is. */
const update: On<'agentCard.update'> = (state, msg, ctx) => {
  const current = state.card!;
  const payload = normalizePayload({ ...current.payload, ...definedOnly(msg.changes) } as PayloadInput);
  if (JSON.stringify(payload) === JSON.stringify(current.payload)) return accept(state, { card: current, listingId: state.listingId, dropped: [] });
  const card: AgentCardRecord = { ...current, payload, version: current.version + 1, updatedAt: ctx.now };
  return accept({ ...state, card }, { card, listingId: state.listingId, dropped: [] }, [{ type: 'cardWritten', card, created: false, by: msg.by, sourceVersion: null }]);
};

/** A card has at most one listing; publishing again answers the one it has. */
const publish: On<'agentCard.publish'> = (state, msg, ctx) => {
  const card = state.card!;
  if (state.listingId !== null) return accept(state, { card, listingId: state.listingId, dropped: [] });
  return accept({ ...state, listingId: msg.listingId }, { card, listingId: msg.listingId, dropped: [] }, [
    { type: 'listingPublished', listingId: msg.listingId, cardId: card.id, orgId: card.orgId, by: msg.by, at: ctx.now, quota: msg.quota },
  ]);
};

/** Materializes a listed card, pinned to its source version, with the org's overlay laid over it. */
const install: On<'agentCard.install'> = (_state, msg, ctx) => {
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
};

/** Re-pins to a newer source version; overlay keys whose targets vanished are dropped, each one audited. */
const acceptUpdate: On<'agentCard.acceptUpdate'> = (state, msg, ctx) => {
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
};


function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export const agentCardMachine = defineMachine<AgentCardState, AgentCardMsg, AgentCardEffect, AgentCardReply, AgentCardLifecycle>({
  statuses: agentCardLifecycle,
  messageTypes: agentCardMsgTypes,
  statusOf: lifecycleOf,
  // Another org's card is indistinguishable from an absent one.
  screen: (state, msg) => (state.card !== null && state.card.orgId !== msg.orgId ? reject('NOT_FOUND', 'agent card not found') : undefined),
  refuse: (from, msg) => {
    if (from === 'absent') return reject('NOT_FOUND', 'agent card not found');
    if (msg.type === 'agentCard.create' || msg.type === 'agentCard.install') return reject('ALREADY_EXISTS', 'an agent card with this id already exists');
    return reject('CONFLICT', from === 'installed'
      ? 'an installed card changes only by accepting a marketplace update'
      : 'this card was not installed from the marketplace', { from, msgType: msg.type });
  },
  table: {
    absent: { 'agentCard.create': go('authored', create), 'agentCard.install': go('installed', install) },
    authored: { 'agentCard.update': go('authored', update), 'agentCard.publish': go('authored', publish) },
    installed: { 'agentCard.acceptUpdate': go('installed', acceptUpdate) },
  },
});
