import { publicSessionId } from '../../../schemas/sessions/session-ids.js';
import { accept, reject, type Rejection } from '../../runtime/machine.js';
import { choose, defineMachine, go, type Take } from '../../runtime/define-machine.js';
import {
  sessionStatuses, terminalStatuses, type SessionEffect, type SessionSpec, type SessionState, type SessionStatus, type TerminalStatus,
} from '../../../schemas/sessions/session-state.js';
export {
  sessionStatuses, terminalStatuses, type SessionEffect, type SessionSpec, type SessionState, type SessionStatus, type TerminalStatus,
} from '../../../schemas/sessions/session-state.js';

/**
 * The agent session (`session/<key>`, schemas/sessions/session-ids.ts), spec 3.1. What each status means:
 * - absent:     never dispatched under this id (the initial state of a fresh actor).
 * - pending:    waiting to be offered to a worker of its project by `POST /api/daemon/poll`.
 * - claimed:    one worker took it (the first claim wins; the actor's mailbox orders racing claims).
 * - running:    the worker's agent is working on it.
 * - paused:     the agent waits for input; a prompt is queued for it and delivered on the worker's next poll.
 * - finalizing: the agent is done and the worker is reporting the outcome.
 * - completed / failed / stopped: terminal. Every move into one of these runs the terminal effects exactly once
 *   (see `TerminalEffect`); a prompt re-dispatches a terminal session as pending under a new epoch.
 *
 * Replies name the session by its public id (schemas/sessions/session-ids.ts); effects and their keys by the key the actor lives under.
 * `epoch` counts dispatches: it keys the terminal effects, so a replayed transition does nothing twice while a
 * re-dispatched session that ends again does account for its second run.
 */

export const liveStatuses = ['pending', 'claimed', 'running', 'paused', 'finalizing'] as const satisfies readonly SessionStatus[];
/** Statuses in which a worker holds the session; a worker that stops heartbeating loses it (leases). */
export const heldStatuses = ['claimed', 'running', 'paused', 'finalizing'] as const satisfies readonly SessionStatus[];
/** Statuses a worker may report through `POST /api/sessions/{id}/status`. */
export const reportableStatuses = ['claimed', 'running', 'paused', 'finalizing', 'completed', 'failed', 'stopped'] as const;
export type ReportableStatus = (typeof reportableStatuses)[number];

export const isTerminal = (s: SessionStatus): s is TerminalStatus => (terminalStatuses as readonly string[]).includes(s);
export const isHeld = (s: SessionStatus): boolean => (heldStatuses as readonly string[]).includes(s);

export { publicSessionId, sessionKey, publicIdPattern, newTrackerSessionId, isNewTrackerSessionId } from '../../../schemas/sessions/session-ids.js';

/** A session keeps being re-offered after lost leases this many times; the next lost lease fails it. */
export const MAX_LEASE_RECLAIMS = 3;

export const initialSessionState = (): SessionState => ({
  status: 'absent', spec: null, prompt: '', workerId: null, epoch: 0, costUsd: 0, error: null, phase: null,
  leaseReclaims: 0, createdAt: 0, updatedAt: 0, claimedAt: null, startedAt: null, finishedAt: null,
});

/** All are asks except `session.leaseExpired`, which the lease sweeper tells. */
export type SessionMsg =
  | ({ readonly type: 'session.dispatch' } & SessionSpec)
  | {
      readonly type: 'session.transition';
      readonly status: ReportableStatus;
      readonly workerId: string;
      /** The reporting worker's org and projects: a session outside them is NOT_FOUND (the `screen`). */
      readonly orgId: string;
      readonly projectIds: readonly string[];
      readonly costUsd?: number;
      readonly error?: string;
      readonly phase?: string;
    }
  | {
      readonly type: 'session.stop';
      readonly requestedBy: string;
      /** Set when the server stops it (`budget`, `superseded`); a person's stop has none. */
      readonly reason?: string;
      /** What the stop's audit entry adds (the budget's limit, the superseding session). */
      readonly details?: Readonly<Record<string, string | number | null>>;
    }
  | { readonly type: 'session.prompt'; readonly promptId: string; readonly prompt: string; readonly requestedBy: string }
  | { readonly type: 'session.leaseExpired'; readonly workerId: string };

export type SessionMsgType = SessionMsg['type'];
export const sessionMsgTypes = [
  'session.dispatch', 'session.transition', 'session.stop', 'session.prompt', 'session.leaseExpired',
] as const satisfies readonly SessionMsgType[];

export type SessionReply =
  | { readonly kind: 'dispatched'; readonly sessionId: string; readonly status: SessionStatus }
  | { readonly kind: 'transitioned'; readonly sessionId: string; readonly previousStatus: SessionStatus; readonly newStatus: SessionStatus }
  | { readonly kind: 'stopped'; readonly stopped: boolean; readonly sessionId: string; readonly previousStatus: SessionStatus; readonly newStatus: SessionStatus }
  | { readonly kind: 'prompted'; readonly delivered: boolean; readonly promptId: string; readonly sessionId: string; readonly status: SessionStatus }
  | { readonly kind: 'leaseChecked'; readonly sessionId: string; readonly status: SessionStatus };

type On<T extends SessionMsgType, To = SessionStatus> =
  Take<SessionState, Extract<SessionMsg, { type: T }>, SessionEffect, SessionReply, SessionStatus, To>;

const illegal = (from: SessionStatus, msg: SessionMsg): Rejection =>
  reject('ILLEGAL_TRANSITION', msg.type === 'session.transition'
    ? `a session cannot move from ${from} to ${msg.status}`
    : `${msg.type} is not allowed on a ${from} session`, { from, msgType: msg.type });

/** The name a reply gives the session: its public id, whichever of its names the caller used. */
export const shownId = (state: SessionState): string => (state.spec === null ? '' : publicSessionId(state.spec.trackerSessionId));

export const terminalKey = (sessionId: string, epoch: number): string => `${sessionId}:${epoch}:terminal`;

/** `requestedBy` of sessions a workflow run dispatches (actors/kinds/workflow-run/ports.ts). */
export const RUN_REQUESTER_PREFIX = 'workflow-run:';

/** The run that dispatched this session, when a workflow run's agent step did. */
export function requestingRunId(spec: SessionSpec | null): string | null {
  const by = spec?.requestedBy;
  return by !== undefined && by.startsWith(RUN_REQUESTER_PREFIX) && by.length > RUN_REQUESTER_PREFIX.length
    ? by.slice(RUN_REQUESTER_PREFIX.length)
    : null;
}

/**
 * The terminal effects of one run: one ledger key, plus the tracker activity keyed under the same run; and, for a
 * session a workflow run started, the report back to that run.
 */
function terminalEffects(id: string, state: SessionState, status: TerminalStatus, activityBody: string): SessionEffect[] {
  const key = terminalKey(id, state.epoch);
  const runId = requestingRunId(state.spec);
  return [
    { type: 'sessionWritten' },
    { type: 'activity', key: `${key}:activity`, kind: `session.${status}`, body: activityBody },
    { type: 'terminal', key, status, costUsd: state.costUsd, workerId: state.workerId },
    ...(runId === null ? [] : [{ type: 'notifyRun', runId, status, error: state.error } as const]),
  ];
}

/** The first dispatch under this id. */
const create: On<'session.dispatch'> = (state, msg, { id, now, to }) => {
  const { type: _type, ...spec } = msg;
  const next: SessionState = { ...state, status: to, spec, prompt: msg.prompt, epoch: 1, createdAt: now, updatedAt: now };
  return accept(next, { kind: 'dispatched', sessionId: publicSessionId(msg.trackerSessionId), status: to }, [
    { type: 'sessionWritten' },
    { type: 'promptRecorded', promptId: `${id}:1:dispatch`, text: msg.prompt, queued: false },
  ]);
};

/** A dispatch replayed onto an existing session (a retried request) answers what exists; it never re-runs it. */
const replayDispatch: On<'session.dispatch'> = (state, msg, { id, from }) =>
  // Another org's session under the same tracker id is a conflict, never a reply naming its status.
  state.spec?.trackerSessionId === msg.trackerSessionId && state.spec.orgId === msg.orgId
    ? accept(state, { kind: 'dispatched', sessionId: shownId(state), status: from })
    : reject('ALREADY_EXISTS', 'another session has this id');

/** A worker reports a status: one of those the table lists from here. */
const report: On<'session.transition', readonly SessionStatus[]> = (state, msg, { id, now, from, to }) => {
  if (!to.includes(msg.status)) return illegal(from, msg);
  // Only the worker holding a session reports on it; claiming is the one move that names a new worker.
  if (from !== 'pending' && state.workerId !== msg.workerId) {
    return reject('ILLEGAL_TRANSITION', 'the session is held by another worker', { from, msgType: msg.type });
  }
  const costUsd = msg.costUsd ?? state.costUsd;
  const phase = msg.phase ?? state.phase;
  const error = msg.error ?? state.error;
  const reply: SessionReply = { kind: 'transitioned', sessionId: shownId(state), previousStatus: from, newStatus: msg.status };
  // Re-reporting the current status (a retried request) changes nothing unless it carries news.
  if (msg.status === from && costUsd === state.costUsd && phase === state.phase && error === state.error) {
    return accept(state, reply);
  }
  const next: SessionState = {
    ...state,
    status: msg.status,
    workerId: msg.status === 'claimed' ? msg.workerId : state.workerId,
    costUsd, phase, error, updatedAt: now,
    claimedAt: msg.status === 'claimed' && from === 'pending' ? now : state.claimedAt,
    startedAt: msg.status === 'running' && state.startedAt === null ? now : state.startedAt,
    finishedAt: isTerminal(msg.status) ? now : state.finishedAt,
  };
  const effects = isTerminal(msg.status)
    ? terminalEffects(id, next, msg.status, msg.status === 'stopped' ? 'Stop signal received' : `Session ${msg.status}`)
    : [{ type: 'sessionWritten' } as const];
  return accept(next, reply, effects);
};

/**
 * The holding worker reports the end the session already reached, with nothing new: a retry after a lost reply, or
 * after a commit whose outcome the worker could not know (issue 30). It is answered as done, changing nothing; any
 * other report on an ended session is still illegal.
 */
const repeatedEnd: On<'session.transition'> = (state, msg, { id, from }) =>
  msg.status === from && msg.workerId === state.workerId && carriesNoNews(state, msg)
    ? accept(state, { kind: 'transitioned', sessionId: shownId(state), previousStatus: from, newStatus: from })
    : illegal(from, msg);

/** A retry repeats its original: a report that would change the cost, phase or error of an ended session is news, refused. */
const carriesNoNews = (state: SessionState, msg: Extract<SessionMsg, { type: 'session.transition' }>): boolean =>
  (msg.costUsd === undefined || msg.costUsd === state.costUsd) && (msg.phase === undefined || msg.phase === state.phase)
  && (msg.error === undefined || msg.error === state.error);

/**
 * The worker that held the session and no longer does, told to end its agent once the change is durable. From
 * finalizing its agent has already exited, and a worker that reported the end itself needs no telling.
 */
function workerLost(previous: SessionState, next: SessionState, reason: string): SessionEffect[] {
  const holder = previous.workerId;
  if (holder === null || !isHeld(previous.status) || previous.status === 'finalizing') return [];
  return [{ type: 'workerStopped', orgId: next.spec!.orgId, sessionId: shownId(next), workerId: holder, status: next.status, reason }];
}

/** Stopping a live session ends it: its terminal effects, its audit entry, and its worker told to end the agent. */
const stop: On<'session.stop', TerminalStatus> = (state, msg, { id, now, from, to }) => {
  const next: SessionState = { ...state, status: to, updatedAt: now, finishedAt: now };
  const recorded: SessionEffect = {
    type: 'stopRecorded', requestedBy: msg.requestedBy, previousStatus: from, reason: msg.reason ?? null, details: msg.details ?? {},
  };
  return accept(next, { kind: 'stopped', stopped: true, sessionId: shownId(state), previousStatus: from, newStatus: to },
    [...terminalEffects(id, next, to, 'Stop signal received'), recorded, ...workerLost(state, next, 'stopped')]);
};

/** Stopping a session that has ended changes nothing, and says so. */
const alreadyEnded: On<'session.stop'> = (state, _msg, { id, from }) =>
  accept(state, { kind: 'stopped', stopped: false, sessionId: shownId(state), previousStatus: from, newStatus: from });

/** A live session keeps its status; the prompt waits in its inbox for the worker's next poll. */
const queuePrompt: On<'session.prompt'> = (state, msg, { id, now, from }) => {
  const next: SessionState = { ...state, updatedAt: now };
  return accept(next, { kind: 'prompted', delivered: true, promptId: msg.promptId, sessionId: shownId(state), status: from }, [
    { type: 'promptRecorded', promptId: msg.promptId, text: msg.prompt, queued: true },
  ]);
};

/** A prompt to a session that has ended re-dispatches it: a new run under a new epoch, offered to workers again. */
const redispatch: On<'session.prompt'> = (state, msg, { id, now, to }) => {
  const next: SessionState = {
    ...state, status: to, prompt: msg.prompt, epoch: state.epoch + 1, workerId: null, error: null, phase: null,
    leaseReclaims: 0, updatedAt: now, claimedAt: null, startedAt: null, finishedAt: null,
  };
  return accept(next, { kind: 'prompted', delivered: true, promptId: msg.promptId, sessionId: shownId(state), status: to }, [
    { type: 'sessionWritten' },
    { type: 'promptRecorded', promptId: msg.promptId, text: msg.prompt, queued: false },
  ]);
};

/**
 * The lease sweeper saw the holding worker stop heartbeating. The session goes back to the queue where the table
 * lets it (not once the worker is finalizing) while reclaims are left, and fails otherwise.
 */
const leaseLost: On<'session.leaseExpired', readonly SessionStatus[]> = (state, msg, { id, now, from, to }) => {
  // If the session has since moved to another worker, the news is old.
  if (state.workerId !== msg.workerId) return accept(state, { kind: 'leaseChecked', sessionId: shownId(state), status: from });
  if (to.includes('pending') && state.leaseReclaims < MAX_LEASE_RECLAIMS) {
    const next: SessionState = {
      ...state, status: 'pending', workerId: null, leaseReclaims: state.leaseReclaims + 1, updatedAt: now,
      claimedAt: null, startedAt: null, phase: null,
    };
    return accept(next, { kind: 'leaseChecked', sessionId: shownId(state), status: next.status }, [
      { type: 'sessionWritten' },
      { type: 'activity', key: `${id}:${state.epoch}:reclaim:${next.leaseReclaims}`, kind: 'session.reclaimed', body: 'Worker lease expired; session returned to the queue' },
      ...workerLost(state, next, 'reclaimed: the worker lease expired'),
    ]);
  }
  const next: SessionState = { ...state, status: 'failed', error: 'worker lease expired', updatedAt: now, finishedAt: now };
  return accept(next, { kind: 'leaseChecked', sessionId: shownId(state), status: next.status },
    [...terminalEffects(id, next, 'failed', 'Session failed: its worker stopped heartbeating'), ...workerLost(state, next, 'worker lease expired')]);
};

const inScope = (spec: SessionSpec, msg: { readonly orgId: string; readonly projectIds: readonly string[] }): boolean =>
  spec.orgId === msg.orgId && msg.projectIds.includes(spec.projectId);

/**
 * The status graph, and the code of each move. For `session.transition` the listed statuses are the ones a worker
 * may report from each status; for other messages, where the message leads. A pair that is absent is rejected
 * with ILLEGAL_TRANSITION (409), or NOT_FOUND for a session never dispatched, and changes nothing.
 */
export const sessionMachine = defineMachine<SessionState, SessionMsg, SessionEffect, SessionReply, SessionStatus>({
  statuses: sessionStatuses,
  messageTypes: sessionMsgTypes,
  statusOf: (state) => state.status,
  // A worker hears nothing about a session outside its org and projects, whatever its status (no 409 naming it).
  screen: (state, msg) => (msg.type === 'session.transition' && state.spec !== null && !inScope(state.spec, msg)
    ? reject('NOT_FOUND', 'session not found')
    : undefined),
  refuse: (from, msg) => (from === 'absent' ? reject('NOT_FOUND', 'session not found') : illegal(from, msg)),
  table: {
    absent: { 'session.dispatch': go('pending', create) },
    pending: {
      'session.dispatch': go('pending', replayDispatch),
      'session.transition': choose(['claimed'], report),
      'session.stop': go('stopped', stop),
      'session.prompt': go('pending', queuePrompt),
    },
    claimed: {
      'session.transition': choose(['claimed', 'running'], report),
      'session.stop': go('stopped', stop),
      'session.prompt': go('claimed', queuePrompt),
      'session.leaseExpired': choose(['pending', 'failed'], leaseLost),
    },
    running: {
      'session.transition': choose(['running', 'paused', 'finalizing'], report),
      'session.stop': go('stopped', stop),
      'session.prompt': go('running', queuePrompt),
      'session.leaseExpired': choose(['pending', 'failed'], leaseLost),
    },
    paused: {
      'session.transition': choose(['paused', 'running', 'finalizing'], report),
      'session.stop': go('stopped', stop),
      'session.prompt': go('paused', queuePrompt),
      'session.leaseExpired': choose(['pending', 'failed'], leaseLost),
    },
    finalizing: {
      'session.transition': choose(['finalizing', 'completed', 'failed', 'stopped'], report),
      'session.stop': go('stopped', stop),
      'session.leaseExpired': choose(['failed'], leaseLost),
    },
    completed: {
      'session.dispatch': go('completed', replayDispatch), 'session.transition': go('completed', repeatedEnd),
      'session.stop': go('completed', alreadyEnded), 'session.prompt': go('pending', redispatch),
    },
    failed: {
      'session.dispatch': go('failed', replayDispatch), 'session.transition': go('failed', repeatedEnd),
      'session.stop': go('failed', alreadyEnded), 'session.prompt': go('pending', redispatch),
    },
    stopped: {
      'session.dispatch': go('stopped', replayDispatch), 'session.transition': go('stopped', repeatedEnd),
      'session.stop': go('stopped', alreadyEnded), 'session.prompt': go('pending', redispatch),
    },
  },
});
