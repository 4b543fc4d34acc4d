import { accept, allows, reject, type DecideContext, type Decision, type Machine, type TransitionTable } from '../../runtime/machine.js';
import type { RouteAction } from './routing.js';

/**
 * One accepted provider delivery, `provider-event/<eventId>` (decision 0014). The ingest route records the
 * delivery and tells this actor before answering 200; the actor carries out what the event asks for.
 *
 * Statuses:
 * - absent: nothing known yet.
 * - routing: a session dispatch is under way (the effect runs after this state is durable).
 * - routed: the session was dispatched, or (CI failure) the activity was noted on it; `sessionId` names it.
 * - ignored: no handler for this event; the reason is recorded.
 * - failed: the dispatch was refused or did not answer; the error is recorded.
 * A repeated `providerEvent.route` (a broker redelivery) in any status but absent changes nothing.
 */
export type ProviderEventStatus = 'absent' | 'routing' | 'routed' | 'ignored' | 'failed';

export interface ProviderEventState {
  readonly status: ProviderEventStatus;
  readonly orgId: string | null;
  readonly provider: string | null;
  readonly eventType: string | null;
  readonly sessionId: string | null;
  readonly detail: string | null;
  readonly updatedAt: number;
}

export const initialProviderEventState = (): ProviderEventState =>
  ({ status: 'absent', orgId: null, provider: null, eventType: null, sessionId: null, detail: null, updatedAt: 0 });

export type ProviderEventMsg =
  | {
      readonly type: 'providerEvent.route';
      readonly orgId: string;
      readonly provider: string;
      readonly eventType: string;
      /** Where a dispatched session goes; null when the org has no project. */
      readonly projectId: string | null;
      readonly action: RouteAction;
    }
  | { readonly type: 'providerEvent.dispatched'; readonly sessionId: string }
  | { readonly type: 'providerEvent.dispatchFailed'; readonly error: string };

export type ProviderEventReply = { readonly status: ProviderEventStatus; readonly sessionId: string | null };

export type ProviderEventEffect =
  | {
      readonly type: 'dispatchSession';
      readonly orgId: string;
      readonly projectId: string;
      readonly trackerSessionId: string;
      readonly trackerIssue: string | null;
      readonly prompt: string;
      readonly provider: string;
    }
  /**
   * A note on a session of this org (a failed CI job), written in the snapshot transaction under the key
   * `webhook:<eventId>`: one per delivery, however often it is routed or replayed.
   */
  | { readonly type: 'sessionActivity'; readonly orgId: string; readonly sessionId: string; readonly kind: string; readonly body: string }
  /** The outcome row in `provider_webhook_events`, written in the snapshot transaction. */
  | { readonly type: 'recordOutcome' };

export const providerEventMsgTypes = ['providerEvent.route', 'providerEvent.dispatched', 'providerEvent.dispatchFailed'] as const;
type MsgType = (typeof providerEventMsgTypes)[number];
export const providerEventStatuses = ['absent', 'routing', 'routed', 'ignored', 'failed'] as const;

export const providerEventTransitions: TransitionTable<ProviderEventStatus, MsgType> = {
  // absent → routed directly for a session activity: it is written with the snapshot, there is nothing to await.
  absent: { 'providerEvent.route': ['routing', 'routed', 'ignored', 'failed'] },
  routing: { 'providerEvent.route': ['routing'], 'providerEvent.dispatched': ['routed'], 'providerEvent.dispatchFailed': ['failed'] },
  routed: { 'providerEvent.route': ['routed'], 'providerEvent.dispatched': ['routed'] },
  ignored: { 'providerEvent.route': ['ignored'] },
  failed: { 'providerEvent.route': ['failed'], 'providerEvent.dispatchFailed': ['failed'] },
};

type D = Decision<ProviderEventState, ProviderEventEffect, ProviderEventReply>;

const replyOf = (s: ProviderEventState): ProviderEventReply => ({ status: s.status, sessionId: s.sessionId });

export function decideProviderEvent(state: ProviderEventState, msg: ProviderEventMsg, ctx: DecideContext): D {
  if (!allows(providerEventTransitions, state.status, msg.type)) {
    return reject('ILLEGAL_TRANSITION', `${msg.type} is not allowed on a ${state.status} provider event`, { from: state.status, msgType: msg.type });
  }
  switch (msg.type) {
    case 'providerEvent.route': {
      if (state.status !== 'absent') return accept(state, replyOf(state));
      const base = { ...state, orgId: msg.orgId, provider: msg.provider, eventType: msg.eventType, updatedAt: ctx.now };
      if (msg.action.kind === 'ignore') {
        const next: ProviderEventState = { ...base, status: 'ignored', detail: msg.action.reason };
        return accept(next, replyOf(next), [{ type: 'recordOutcome' }]);
      }
      if (msg.action.kind === 'recordSessionActivity') {
        const next: ProviderEventState = { ...base, status: 'routed', sessionId: msg.action.sessionId };
        return accept(next, replyOf(next), [
          { type: 'sessionActivity', orgId: msg.orgId, sessionId: msg.action.sessionId, kind: msg.action.activityKind, body: msg.action.body },
          { type: 'recordOutcome' },
        ]);
      }
      if (msg.projectId === null) {
        const next: ProviderEventState = { ...base, status: 'failed', detail: 'the org has no project to dispatch into' };
        return accept(next, replyOf(next), [{ type: 'recordOutcome' }]);
      }
      const next: ProviderEventState = { ...base, status: 'routing' };
      return accept(next, replyOf(next), [{
        type: 'dispatchSession', orgId: msg.orgId, projectId: msg.projectId, trackerSessionId: msg.action.trackerSessionId,
        trackerIssue: msg.action.trackerIssue, prompt: msg.action.prompt, provider: msg.provider,
      }]);
    }
    case 'providerEvent.dispatched': {
      if (state.status === 'routed') return accept(state, replyOf(state));
      const next: ProviderEventState = { ...state, status: 'routed', sessionId: msg.sessionId, detail: null, updatedAt: ctx.now };
      return accept(next, replyOf(next), [{ type: 'recordOutcome' }]);
    }
    case 'providerEvent.dispatchFailed': {
      if (state.status === 'failed') return accept(state, replyOf(state));
      const next: ProviderEventState = { ...state, status: 'failed', detail: msg.error.slice(0, 500), updatedAt: ctx.now };
      return accept(next, replyOf(next), [{ type: 'recordOutcome' }]);
    }
  }
}

export const providerEventMachine: Machine<ProviderEventState, ProviderEventMsg, ProviderEventEffect, ProviderEventReply, ProviderEventStatus> = {
  statuses: providerEventStatuses, messageTypes: providerEventMsgTypes, transitions: providerEventTransitions, statusOf: (state) => state.status, decide: decideProviderEvent,
};
