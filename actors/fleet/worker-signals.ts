import type { ActorBehavior } from '../runtime/machine.js';
import { withAnnouncement } from '../runtime/announce.js';
import type { Transport } from '../../transport/port.js';
import { isHeld, isTerminal, shownId, type SessionEffect, type SessionMsg, type SessionReply, type SessionState } from '../session/machine.js';
import type { OfferedSession } from '../../storage/sessions/queries.js';

/**
 * What the session actor tells workers, pushed on their daemon event stream (`GET /api/daemon/events`,
 * decision 0021) once the change is durable:
 * - `offer`:  the session entered the queue; an idle worker of its project may claim it at once, without waiting
 *             for its next poll (the poll stays, as the fallback for anything a stream missed).
 * - `poll`:   work of the project may be waiting that only a poll may hand out (a session behind an issue lock, or a
 *             waiter promoted when the lock's holder ended): the worker polls now.
 * - `stop`:   the worker held this session and no longer does (stopped by a user, reclaimed or failed after a lost
 *             lease): it ends the agent and reports nothing.
 * - `prompt`: a prompt was queued for a session the worker holds: it polls now to receive it.
 * Signals travel on one topic per org; each node hands them to its own connected workers (./worker-streams.ts).
 */
export type WorkerSignal =
  | { readonly kind: 'offer'; readonly projectId: string; readonly session: OfferedSession }
  | { readonly kind: 'poll'; readonly projectId: string }
  | { readonly kind: 'stop'; readonly workerId: string; readonly sessionId: string; readonly status: string; readonly reason: string }
  | { readonly kind: 'prompt'; readonly workerId: string; readonly sessionId: string };

export interface WorkerSignalBatch {
  readonly orgId: string;
  readonly signals: readonly WorkerSignal[];
}

export const workerSignalTopic = (orgId: string): string => `org.${orgId}.daemon.signal`;
export const WORKER_SIGNAL_PATTERN = 'org.*.daemon.signal';

function offerOf(s: SessionState): OfferedSession {
  const spec = s.spec!;
  return {
    id: shownId(s), projectId: spec.projectId, prompt: s.prompt,
    ...(spec.agentCardId ? { agentCardId: spec.agentCardId } : {}),
    ...(spec.workType ? { workType: spec.workType } : {}),
    ...(spec.provider ? { provider: spec.provider } : {}),
  };
}

const stopReason = (next: SessionState): string => {
  if (next.status === 'stopped') return 'stopped';
  if (next.status === 'pending') return 'reclaimed: the worker lease expired';
  return next.error ?? next.status;
};

/** The signals a durable change sends, or undefined for none. Pure, so it is tested without a transport. */
export function workerSignalsOf(previous: SessionState, next: SessionState, _key: string, message: { type: string }): WorkerSignalBatch | undefined {
  const spec = next.spec;
  if (spec === null) return undefined;
  // Workers know sessions by their public ids (decision 0068).
  const sessionId = shownId(next);
  const signals: WorkerSignal[] = [];
  // Queued: a session without an issue is offered as it is; one with an issue may be waiting for the issue's lock,
  // which only the poll's query knows, so workers are asked to poll.
  if (next.status === 'pending' && previous.status !== 'pending') {
    signals.push(spec.trackerIssue === null
      ? { kind: 'offer', projectId: spec.projectId, session: offerOf(next) }
      : { kind: 'poll', projectId: spec.projectId });
  }
  // The holder lost it other than by its own report: from finalizing the agent has already exited.
  const holder = previous.workerId;
  if (holder !== null && isHeld(previous.status) && previous.status !== 'finalizing'
    && (isTerminal(next.status) || next.workerId !== holder) && message.type !== 'session.transition') {
    signals.push({ kind: 'stop', workerId: holder, sessionId, status: next.status, reason: stopReason(next) });
  }
  // An ended session with an issue released the issue's lock, which may have promoted a waiter.
  if (isTerminal(next.status) && !isTerminal(previous.status) && spec.trackerIssue !== null) {
    signals.push({ kind: 'poll', projectId: spec.projectId });
  }
  if (message.type === 'session.prompt' && next.status === previous.status && next.workerId !== null && isHeld(next.status)) {
    signals.push({ kind: 'prompt', workerId: next.workerId, sessionId });
  }
  return signals.length === 0 ? undefined : { orgId: spec.orgId, signals };
}

type SessionBehavior = ActorBehavior<SessionState, SessionMsg, SessionReply, SessionEffect>;

/** Publishes the session's worker signals after each durable change; best effort (the poll is the fallback). */
export function withWorkerSignals(behavior: SessionBehavior, transport: Transport | undefined): SessionBehavior {
  if (!transport) return behavior;
  return withAnnouncement(behavior, {
    effectType: 'workerSignals.announce',
    announce: (previous, next, id, message) => workerSignalsOf(previous, next, id, message),
    deliver: (batch) => transport.publish(workerSignalTopic(batch.orgId), batch),
  });
}
