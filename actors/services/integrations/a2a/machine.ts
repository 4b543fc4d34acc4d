import { accept, reject } from '../../../runtime/machine.js';
import { defineMachine, go, type Take } from '../../../runtime/define-machine.js';
import type { ExternalAgentCard } from './agent-card-fetch.js';
import type { TrustLevel, ExternalAgentRecord } from '../../../../schemas/agents/external-agent.js';
export { trustLevels, type TrustLevel, type ExternalAgentRecord } from '../../../../schemas/agents/external-agent.js';

/**
 * The external-agent actor (`external-agent/<id>`) owns one registered A2A agent of one org (decision 0015). Its id
 * is derived from (org, url), so registering the same URL twice in one org reaches the same actor and is refused.
 *
 * Statuses:
 * - absent:     never registered under this id.
 * - registered: has a card (the last one fetched, or a placeholder naming the host until one is), a trust level
 *               (`untrusted` on registration; `verified` and `internal` are set by an org admin or owner), and
 *               whether the last fetch reached it. Re-fetches replace the card only when they succeed.
 *
 * Cards are fetched by the caller (I/O) and carried in the message, so `decide` stays pure.
 */

export interface ExternalAgentState { readonly agent: ExternalAgentRecord | null }

export type ExternalAgentMsg =
  | {
      readonly type: 'externalAgent.register'; readonly orgId: string; readonly url: string; readonly card: ExternalAgentCard | null;
      readonly fetchedAt: number; readonly by: string;
    }
  | { readonly type: 'externalAgent.setTrust'; readonly orgId: string; readonly trustLevel: TrustLevel; readonly by: string }
  | { readonly type: 'externalAgent.refreshed'; readonly orgId: string; readonly card: ExternalAgentCard | null; readonly fetchedAt: number };

export type ExternalAgentMsgType = ExternalAgentMsg['type'];
export const externalAgentMsgTypes = ['externalAgent.register', 'externalAgent.setTrust', 'externalAgent.refreshed'] as const satisfies readonly ExternalAgentMsgType[];

export interface ExternalAgentReply { readonly agent: ExternalAgentRecord }

export type ExternalAgentEffect = { readonly type: 'agentWritten'; readonly agent: ExternalAgentRecord; readonly audit: { type: string; by: string; payload: Record<string, unknown> } | null };

export const externalAgentLifecycle = ['absent', 'registered'] as const;
export type ExternalAgentLifecycle = (typeof externalAgentLifecycle)[number];

export const initialExternalAgentState = (): ExternalAgentState => ({ agent: null });
const lifecycleOf = (s: ExternalAgentState): ExternalAgentLifecycle => (s.agent ? 'registered' : 'absent');

/** What we show until the agent's own card has been fetched once. */
export function placeholderCard(url: string): ExternalAgentCard {
  return { name: new URL(url).host, url, version: '', description: '', skills: [] };
}

type On<T extends ExternalAgentMsgType> = Take<
  ExternalAgentState, Extract<ExternalAgentMsg, { type: T }>, ExternalAgentEffect, ExternalAgentReply, ExternalAgentLifecycle, ExternalAgentLifecycle
>;

const register: On<'externalAgent.register'> = (_state, msg, ctx) => {
  const agent: ExternalAgentRecord = {
    id: ctx.id, orgId: msg.orgId, url: msg.url, trustLevel: 'untrusted', card: msg.card ?? placeholderCard(msg.url),
    reachable: msg.card !== null, lastFetchedAt: msg.fetchedAt, createdAt: ctx.now, updatedAt: ctx.now,
  };
  return accept({ agent }, { agent }, [{ type: 'agentWritten', agent, audit: { type: 'a2a.agent_registered', by: msg.by, payload: { url: msg.url, reachable: agent.reachable } } }]);
};

/** Set by an org admin or owner; setting the level it already has changes nothing. */
const setTrust: On<'externalAgent.setTrust'> = (state, msg, ctx) => {
  const current = state.agent!;
  if (current.trustLevel === msg.trustLevel) return accept(state, { agent: current });
  const agent = { ...current, trustLevel: msg.trustLevel, updatedAt: ctx.now };
  return accept({ agent }, { agent }, [{
    type: 'agentWritten', agent, audit: { type: 'a2a.agent_trust_changed', by: msg.by, payload: { from: current.trustLevel, to: msg.trustLevel } },
  }]);
};

/** A re-fetch replaces the card only when it reached the agent. */
const refreshed: On<'externalAgent.refreshed'> = (state, msg, ctx) => {
  const current = state.agent!;
  // A stale result (an older fetch finishing late) never overwrites a newer one.
  if (current.lastFetchedAt !== null && msg.fetchedAt <= current.lastFetchedAt) return accept(state, { agent: current });
  const agent = { ...current, card: msg.card ?? current.card, reachable: msg.card !== null, lastFetchedAt: msg.fetchedAt, updatedAt: ctx.now };
  return accept({ agent }, { agent }, [{ type: 'agentWritten', agent, audit: null }]);
};

export const externalAgentMachine = defineMachine<ExternalAgentState, ExternalAgentMsg, ExternalAgentEffect, ExternalAgentReply, ExternalAgentLifecycle>({
  statuses: externalAgentLifecycle,
  messageTypes: externalAgentMsgTypes,
  statusOf: lifecycleOf,
  // Another org's agent is indistinguishable from an absent one.
  screen: (state, msg) => (state.agent !== null && state.agent.orgId !== msg.orgId ? reject('NOT_FOUND', 'external agent not found') : undefined),
  refuse: (from) => (from === 'absent' ? reject('NOT_FOUND', 'external agent not found') : reject('ALREADY_EXISTS', 'this agent is already registered')),
  table: {
    absent: { 'externalAgent.register': go('registered', register) },
    registered: { 'externalAgent.setTrust': go('registered', setTrust), 'externalAgent.refreshed': go('registered', refreshed) },
  },
});

