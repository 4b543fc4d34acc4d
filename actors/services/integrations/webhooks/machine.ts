import { accept, reject, type Decision } from '../../../runtime/machine.js';
import { choose, defineMachine, go, type Take } from '../../../runtime/define-machine.js';
import type { RouteAction } from './routing.js';
import type { TriggeredRun } from './route-action.js';
import { webhookRunId } from './workflow-triggers.js';

/**
 * One accepted provider delivery, `provider-event/<eventId>` (decision 0014). The ingest route records the
 * delivery and tells this actor before answering 200; the actor carries out what the event asks for.
 *
 * Statuses:
 * - absent: nothing known yet.
 * - routing: a session dispatch, or the runs of the workflows the event triggers, are under way (the effect runs
 *   after this state is durable).
 * - routed: the session was dispatched, or (CI failure) the activity was noted on it (`sessionId` names it), or the
 *   triggered runs were started (`runIds` names them).
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
  /** The runs a delivery's matching webhook triggers started (absent in snapshots from before triggers). */
  readonly runIds?: readonly string[];
  readonly detail: string | null;
  readonly updatedAt: number;
}

export const initialProviderEventState = (): ProviderEventState =>
  ({ status: 'absent', orgId: null, provider: null, eventType: null, sessionId: null, detail: null, updatedAt: 0 });

/** One run to start, with the id derived from the delivery and the workflow (workflow-triggers.ts). */
export interface RunToStart extends TriggeredRun {
  readonly runId: string;
}

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
  | { readonly type: 'providerEvent.dispatchFailed'; readonly error: string }
  /** The triggered runs were started (`runIds`), except those that could not be (`failures`, one line each). */
  | { readonly type: 'providerEvent.runsStarted'; readonly runIds: readonly string[]; readonly failures: readonly string[] };

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
  /** Start the runs of the workflows the delivery triggers, with its payload as their input. */
  | {
      readonly type: 'startRuns'; readonly orgId: string; readonly provider: string; readonly eventType: string;
      readonly runs: readonly RunToStart[]; readonly input: Record<string, unknown>;
      /** Why other workflows were not considered; recorded with the runs' failures. */
      readonly note?: string;
    }
  /** The outcome row in `provider_webhook_events`, written in the snapshot transaction. */
  | { readonly type: 'recordOutcome' };

export const providerEventMsgTypes = ['providerEvent.route', 'providerEvent.dispatched', 'providerEvent.dispatchFailed', 'providerEvent.runsStarted'] as const;
type MsgType = (typeof providerEventMsgTypes)[number];
type D = Decision<ProviderEventState, ProviderEventEffect, ProviderEventReply>;
export const providerEventStatuses = ['absent', 'routing', 'routed', 'ignored', 'failed'] as const;

type On<T extends MsgType, To = ProviderEventStatus> =
  Take<ProviderEventState, Extract<ProviderEventMsg, { type: T }>, ProviderEventEffect, ProviderEventReply, ProviderEventStatus, To>;

const replyOf = (s: ProviderEventState): ProviderEventReply => ({ status: s.status, sessionId: s.sessionId });

/** The first delivery decides what the event asks for; the action names where it goes. */
const route: On<'providerEvent.route', readonly ProviderEventStatus[]> = (state, msg, { now, id }) => {
  const base = { ...state, orgId: msg.orgId, provider: msg.provider, eventType: msg.eventType, updatedAt: now };
  if (msg.action.kind === 'startRuns') {
    const next: ProviderEventState = { ...base, status: 'routing' };
    const runs = msg.action.runs.map((r) => ({ ...r, runId: webhookRunId(id, r.workflowId) }));
    return accept(next, replyOf(next), [{
      type: 'startRuns', orgId: msg.orgId, provider: msg.provider, eventType: msg.eventType, runs, input: msg.action.input,
      ...(msg.action.note === undefined ? {} : { note: msg.action.note }),
    }]);
  }
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
};

/** A redelivery, or news already taken: answers the outcome as it stands. */
const replay = (state: ProviderEventState): D => accept(state, replyOf(state));

const dispatched: On<'providerEvent.dispatched'> = (state, msg, { now, to }) => {
  const next: ProviderEventState = { ...state, status: to, sessionId: msg.sessionId, detail: null, updatedAt: now };
  return accept(next, replyOf(next), [{ type: 'recordOutcome' }]);
};

const dispatchFailed: On<'providerEvent.dispatchFailed'> = (state, msg, { now, to }) => {
  const next: ProviderEventState = { ...state, status: to, detail: msg.error.slice(0, 500), updatedAt: now };
  return accept(next, replyOf(next), [{ type: 'recordOutcome' }]);
};

const runsStarted: On<'providerEvent.runsStarted'> = (state, msg, { now, to }) => {
  const detail = msg.failures.length === 0 ? null : msg.failures.join('; ').slice(0, 500);
  const next: ProviderEventState = { ...state, status: to, runIds: [...msg.runIds], detail, updatedAt: now };
  return accept(next, replyOf(next), [{ type: 'recordOutcome' }]);
};

export const providerEventMachine = defineMachine<ProviderEventState, ProviderEventMsg, ProviderEventEffect, ProviderEventReply, ProviderEventStatus>({
  statuses: providerEventStatuses,
  messageTypes: providerEventMsgTypes,
  statusOf: (state) => state.status,
  refuse: (from, msg) => reject('ILLEGAL_TRANSITION', `${msg.type} is not allowed on a ${from} provider event`, { from, msgType: msg.type }),
  table: {
    // absent → routed directly for a session activity: it is written with the snapshot, there is nothing to await.
    absent: { 'providerEvent.route': choose(['routing', 'routed', 'ignored', 'failed'], route) },
    routing: {
      'providerEvent.route': go('routing', replay),
      'providerEvent.dispatched': go('routed', dispatched),
      'providerEvent.dispatchFailed': go('failed', dispatchFailed),
      'providerEvent.runsStarted': go('routed', runsStarted),
    },
    routed: {
      'providerEvent.route': go('routed', replay), 'providerEvent.dispatched': go('routed', replay), 'providerEvent.runsStarted': go('routed', replay),
    },
    ignored: { 'providerEvent.route': go('ignored', replay) },
    failed: { 'providerEvent.route': go('failed', replay), 'providerEvent.dispatchFailed': go('failed', replay) },
  },
});
