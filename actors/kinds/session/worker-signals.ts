import type { ActorBehavior } from '../../runtime/machine.js';
import { withAnnouncement } from '../../runtime/announce.js';
import type { Transport } from '../../../transport/port.js';
import { isHeld, isTerminal, shownId, type SessionEffect, type SessionMsg, type SessionReply, type SessionState } from './machine.js';
import type { WorkerStop } from './actor.js';
import { offerOf as offerShape, type OfferedSession } from '../../../storage/sessions/offers.js';

/**
 * What the session actor tells workers, pushed on their daemon event stream (`GET /api/daemon/events`,
 * decision 0021) once the change is durable:
 * - `offer`:  the session entered the queue; an idle worker of its project may claim it at once, without waiting
 *             for its next poll (the poll stays, as the fallback for anything a stream missed).
 * - `poll`:   work of the project may be waiting that only a poll may hand out (a session behind an issue lock, or a
 *             waiter promoted when the lock's holder ended): the worker polls now.
 * - `followUp`: a prompt re-dispatched a finished session: only the worker that ran it, which holds its workspace, is
 *             told to poll, where the offer carries the agent's conversation to resume (decision 0075). Other workers
 *             find it on their own polls once that worker is not live or the grace ran out.
 * - `stop`:   the worker held this session and no longer does (stopped by a user, reclaimed or failed after a lost
 *             lease): it ends the agent and reports nothing. The machine declares it (`workerStopped` in ./machine.ts)
 *             and the actor sends it (`tellWorkerToStop` below).
 * - `prompt`: a prompt was queued for a session the worker holds: it polls now to receive it.
 * And what the queue controls send (decision 0079), not the session actor:
 * - `pausesChanged`: a project's queue or a worker of the org was paused or resumed: each node reads the org's pauses
 *             again before it pushes another offer (./offer-pauses.ts).
 * - `pollWorker`: a resumed worker polls now, for the work that waited while it was paused.
 * Signals travel on one topic per org; each node hands them to its own connected workers (./worker-streams.ts).
 */
export type WorkerSignal =
  | { readonly kind: 'offer'; readonly projectId: string; readonly session: OfferedSession; readonly concurrencyKey?: string }
  | { readonly kind: 'poll'; readonly projectId: string }
  | { readonly kind: 'stop'; readonly workerId: string; readonly sessionId: string; readonly status: string; readonly reason: string }
  | { readonly kind: 'prompt'; readonly workerId: string; readonly sessionId: string }
  | { readonly kind: 'followUp'; readonly workerId: string; readonly sessionId: string }
  | { readonly kind: 'pausesChanged' }
  | { readonly kind: 'pollWorker'; readonly workerId: string };

export interface WorkerSignalBatch {
  readonly orgId: string;
  readonly signals: readonly WorkerSignal[];
}

export const workerSignalTopic = (orgId: string): string => `org.${orgId}.daemon.signal`;
export const WORKER_SIGNAL_PATTERN = 'org.*.daemon.signal';

/** A first run's offer, from the state alone (a follow-up's needs a read: see `queued` below). */
function offerOf(s: SessionState): OfferedSession {
  const spec = s.spec!;
  return offerShape({
    id: shownId(s), projectId: spec.projectId, prompt: s.prompt, agentCardId: spec.agentCardId, workType: spec.workType, provider: spec.provider,
    repository: spec.repository ?? null, ref: spec.ref ?? null, agent: spec.agent ?? null, run: s.epoch,
  });
}

/**
 * What a session entering the queue is announced as. A first run without an issue is offered as it is. One with an
 * issue may be waiting for the issue's lock, which only the poll's query knows, so workers are asked to poll. A
 * follow-up is never pushed as an offer: the conversation its agent resumes is read by the poll, so the worker that
 * ran it (when a prompt re-dispatched it) or else the project's workers are asked to poll.
 */
function queued(previous: SessionState, next: SessionState, message: { type: string }): WorkerSignal {
  const spec = next.spec!;
  if (next.epoch > 1) {
    const ranIt = previous.workerId;
    return message.type === 'session.prompt' && ranIt !== null
      ? { kind: 'followUp', workerId: ranIt, sessionId: shownId(next) }
      : { kind: 'poll', projectId: spec.projectId };
  }
  if (spec.trackerIssue !== null) return { kind: 'poll', projectId: spec.projectId };
  // A keyed session may wait for its key's room (decision 0081): the node pushing it knows whether its project limits keys.
  const key = spec.concurrencyKey ?? null;
  return { kind: 'offer', projectId: spec.projectId, session: offerOf(next), ...(key === null ? {} : { concurrencyKey: key }) };
}

/** The signals a durable change sends, or undefined for none. Pure, so it is tested without a transport. */
export function workerSignalsOf(previous: SessionState, next: SessionState, _key: string, message: { type: string }): WorkerSignalBatch | undefined {
  const spec = next.spec;
  if (spec === null) return undefined;
  // Workers know sessions by their public ids (decision 0068).
  const sessionId = shownId(next);
  const signals: WorkerSignal[] = [];
  if (next.status === 'pending' && previous.status !== 'pending') signals.push(queued(previous, next, message));
  // An ended session with an issue released the issue's lock, which may have promoted a waiter; one with a
  // concurrency key gave back its place, which a session of the key may be waiting for (decision 0081).
  if (isTerminal(next.status) && !isTerminal(previous.status) && (spec.trackerIssue !== null || (spec.concurrencyKey ?? null) !== null)) {
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

/**
 * Publishes what a queue control (decision 0079) tells the org's workers, once its change is durable. Best effort
 * like the session's signals: the poll reads the pauses itself, and each node reads them again within
 * PAUSES_MAX_AGE_MS of ./offer-pauses.ts, so a lost publish costs latency, never an offer to what is paused for long.
 */
export async function announceQueueControl(
  deps: { readonly transport: Pick<Transport, 'publish'>; readonly log: { warn(obj: object, msg: string): void } },
  orgId: string, signals: readonly WorkerSignal[],
): Promise<void> {
  const batch: WorkerSignalBatch = { orgId, signals };
  await deps.transport.publish(workerSignalTopic(orgId), batch)
    .catch((err: unknown) => deps.log.warn({ err, orgId, signals: signals.map((s) => s.kind) }, 'could not tell the workers of a queue control'));
}

/** Sends a `stop` the session machine declared (`workerStopped`) to the worker, through every node's worker streams. */
export const tellWorkerToStop = (transport: Pick<Transport, 'publish'>) => (orgId: string, stop: WorkerStop): Promise<void> => {
  const batch: WorkerSignalBatch = { orgId, signals: [{ kind: 'stop', ...stop }] };
  return transport.publish(workerSignalTopic(orgId), batch);
};
