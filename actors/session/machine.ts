import { createHash } from 'node:crypto';
import { accept, allows, reject, type Decision, type DecideContext, type Machine, type TransitionTable } from '../runtime/machine.js';
import {
  sessionStatuses, terminalStatuses, type SessionEffect, type SessionSpec, type SessionState, type SessionStatus, type TerminalStatus,
} from '../../schemas/sessions/session-state.js';
export {
  sessionStatuses, terminalStatuses, type SessionEffect, type SessionSpec, type SessionState, type SessionStatus, type TerminalStatus,
} from '../../schemas/sessions/session-state.js';

/**
 * The agent session (`session/<publicId>`), spec 3.1. What each status means:
 * - absent:     never dispatched under this id (the initial state of a fresh actor).
 * - pending:    waiting to be offered to a worker of its project by `POST /v1/daemon/poll`.
 * - claimed:    one worker took it (the first claim wins; the actor's mailbox orders racing claims).
 * - running:    the worker's agent is working on it.
 * - paused:     the agent waits for input; a prompt is queued for it and delivered on the worker's next poll.
 * - finalizing: the agent is done and the worker is reporting the outcome.
 * - completed / failed / stopped: terminal. Every move into one of these runs the terminal effects exactly once
 *   (see `TerminalEffect`); a prompt re-dispatches a terminal session as pending under a new epoch.
 *
 * A session's public id is the first 16 hex characters of the SHA-256 of the tracker's session identifier.
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

/** The public id: 16 hex characters of SHA-256 over the tracker's session identifier (spec 2.7). */
export function publicSessionId(trackerSessionId: string): string {
  return createHash('sha256').update(trackerSessionId, 'utf8').digest('hex').slice(0, 16);
}
export const publicIdPattern = /^[0-9a-f]{16}$/;

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
      readonly costUsd?: number;
      readonly error?: string;
      readonly phase?: string;
    }
  | { readonly type: 'session.stop'; readonly requestedBy: string }
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

/**
 * The status graph. For `session.transition` the listed statuses are the targets a worker may report from each
 * status; for other messages, where the message may lead. A pair that is absent is rejected with
 * ILLEGAL_TRANSITION (409) and changes nothing.
 */
export const sessionTransitions: TransitionTable<SessionStatus, SessionMsgType> = {
  absent: { 'session.dispatch': ['pending'] },
  pending: {
    'session.dispatch': ['pending'],
    'session.transition': ['claimed'],
    'session.stop': ['stopped'],
    'session.prompt': ['pending'],
  },
  claimed: {
    'session.transition': ['claimed', 'running'],
    'session.stop': ['stopped'],
    'session.prompt': ['claimed'],
    'session.leaseExpired': ['pending', 'failed'],
  },
  running: {
    'session.transition': ['running', 'paused', 'finalizing'],
    'session.stop': ['stopped'],
    'session.prompt': ['running'],
    'session.leaseExpired': ['pending', 'failed'],
  },
  paused: {
    'session.transition': ['paused', 'running', 'finalizing'],
    'session.stop': ['stopped'],
    'session.prompt': ['paused'],
    'session.leaseExpired': ['pending', 'failed'],
  },
  finalizing: {
    'session.transition': ['finalizing', 'completed', 'failed', 'stopped'],
    'session.stop': ['stopped'],
    'session.leaseExpired': ['failed'],
  },
  completed: { 'session.dispatch': ['completed'], 'session.stop': ['completed'], 'session.prompt': ['pending'] },
  failed: { 'session.dispatch': ['failed'], 'session.stop': ['failed'], 'session.prompt': ['pending'] },
  stopped: { 'session.dispatch': ['stopped'], 'session.stop': ['stopped'], 'session.prompt': ['pending'] },
};

type SessionDecision = Decision<SessionState, SessionEffect, SessionReply>;

const illegal = (from: SessionStatus, msg: SessionMsg): SessionDecision =>
  reject('ILLEGAL_TRANSITION', msg.type === 'session.transition'
    ? `a session cannot move from ${from} to ${msg.status}`
    : `${msg.type} is not allowed on a ${from} session`, { from, msgType: msg.type });

export const terminalKey = (sessionId: string, epoch: number): string => `${sessionId}:${epoch}:terminal`;

/** `requestedBy` of sessions a workflow run dispatches (actors/workflow-run/ports.ts). */
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

export function decideSession(state: SessionState, msg: SessionMsg, ctx: DecideContext): SessionDecision {
  const from = state.status;
  const allowed = allows(sessionTransitions, from, msg.type);
  if (!allowed) return from === 'absent' ? reject('NOT_FOUND', 'session not found') : illegal(from, msg);
  const id = ctx.id;
  const now = ctx.now;

  switch (msg.type) {
    case 'session.dispatch': {
      // A dispatch replayed onto an existing session (a retried request) answers what exists; it never re-runs it.
      if (from !== 'absent') {
        // Another org's session under the same tracker id is a conflict, never a reply naming its status.
        return state.spec?.trackerSessionId === msg.trackerSessionId && state.spec.orgId === msg.orgId
          ? accept(state, { kind: 'dispatched', sessionId: id, status: from })
          : reject('ALREADY_EXISTS', 'another session has this id');
      }
      const { type: _type, ...spec } = msg;
      const next: SessionState = {
        ...state, status: 'pending', spec, prompt: msg.prompt, epoch: 1, createdAt: now, updatedAt: now,
      };
      return accept(next, { kind: 'dispatched', sessionId: id, status: 'pending' }, [
        { type: 'sessionWritten' },
        { type: 'promptRecorded', promptId: `${id}:1:dispatch`, text: msg.prompt, queued: false },
      ]);
    }

    case 'session.transition': {
      if (!allowed.includes(msg.status)) return illegal(from, msg);
      // Only the worker holding a session reports on it; claiming is the one move that names a new worker.
      if (from !== 'pending' && state.workerId !== msg.workerId) {
        return reject('ILLEGAL_TRANSITION', 'the session is held by another worker', { from, msgType: msg.type });
      }
      const costUsd = msg.costUsd ?? state.costUsd;
      const phase = msg.phase ?? state.phase;
      const error = msg.error ?? state.error;
      const reply: SessionReply = { kind: 'transitioned', sessionId: id, previousStatus: from, newStatus: msg.status };
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
    }

    case 'session.stop': {
      if (isTerminal(from)) {
        return accept(state, { kind: 'stopped', stopped: false, sessionId: id, previousStatus: from, newStatus: from });
      }
      const next: SessionState = { ...state, status: 'stopped', updatedAt: now, finishedAt: now };
      return accept(next, { kind: 'stopped', stopped: true, sessionId: id, previousStatus: from, newStatus: 'stopped' },
        terminalEffects(id, next, 'stopped', 'Stop signal received'));
    }

    case 'session.prompt': {
      if (isTerminal(from)) {
        // Re-dispatch: a new run under a new epoch, offered to workers again with this prompt.
        const epoch = state.epoch + 1;
        const next: SessionState = {
          ...state, status: 'pending', prompt: msg.prompt, epoch, workerId: null, error: null, phase: null,
          leaseReclaims: 0, updatedAt: now, claimedAt: null, startedAt: null, finishedAt: null,
        };
        return accept(next, { kind: 'prompted', delivered: true, promptId: msg.promptId, sessionId: id, status: 'pending' }, [
          { type: 'sessionWritten' },
          { type: 'promptRecorded', promptId: msg.promptId, text: msg.prompt, queued: false },
        ]);
      }
      // A live session keeps its status; the prompt waits in its inbox for the worker's next poll.
      const next: SessionState = { ...state, updatedAt: now };
      return accept(next, { kind: 'prompted', delivered: true, promptId: msg.promptId, sessionId: id, status: from }, [
        { type: 'promptRecorded', promptId: msg.promptId, text: msg.prompt, queued: true },
      ]);
    }

    case 'session.leaseExpired': {
      // The sweeper saw a stale worker; if the session has since moved to another worker, the news is old.
      if (state.workerId !== msg.workerId) return accept(state, { kind: 'leaseChecked', sessionId: id, status: from });
      const giveUp = from === 'finalizing' || state.leaseReclaims >= MAX_LEASE_RECLAIMS;
      if (giveUp) {
        const next: SessionState = {
          ...state, status: 'failed', error: 'worker lease expired', updatedAt: now, finishedAt: now,
        };
        return accept(next, { kind: 'leaseChecked', sessionId: id, status: 'failed' },
          terminalEffects(id, next, 'failed', 'Session failed: its worker stopped heartbeating'));
      }
      const next: SessionState = {
        ...state, status: 'pending', workerId: null, leaseReclaims: state.leaseReclaims + 1, updatedAt: now,
        claimedAt: null, startedAt: null, phase: null,
      };
      return accept(next, { kind: 'leaseChecked', sessionId: id, status: 'pending' }, [
        { type: 'sessionWritten' },
        { type: 'activity', key: `${id}:${state.epoch}:reclaim:${next.leaseReclaims}`, kind: 'session.reclaimed', body: 'Worker lease expired; session returned to the queue' },
      ]);
    }
  }
}

export const sessionMachine: Machine<SessionState, SessionMsg, SessionEffect, SessionReply, SessionStatus> = {
  statuses: sessionStatuses, messageTypes: sessionMsgTypes, transitions: sessionTransitions, statusOf: (state) => state.status, decide: decideSession,
};
