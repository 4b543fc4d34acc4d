import type { ActorBehavior } from '../runtime/machine.js';
import { withAnnouncement } from '../runtime/announce.js';
import type { Transport } from '../../transport/port.js';
import type { SessionEffect, SessionMsg, SessionReply, SessionState } from '../session/machine.js';
import { streamTopics, type SessionEvent } from './node-streams.js';

/**
 * Publishes the session actor's status changes for `GET /api/sessions/events` (decision 0012), without touching
 * its machine: the change is announced from the turn that made it, once it is durable (`actors/runtime/announce.ts`).
 * Publishing is best effort: a lost event costs a live view one update, which the client's reload (or the session
 * detail) repairs; it never fails the session's turn.
 */
type SessionBehavior = ActorBehavior<SessionState, SessionMsg, SessionReply, SessionEffect>;

export function withSessionEvents(behavior: SessionBehavior, transport: Transport | undefined): SessionBehavior {
  if (!transport) return behavior;
  return withAnnouncement(behavior, {
    effectType: 'sessionEvents.announce',
    announce: (previous, next, id) => sessionEventOf(id, next, previous),
    deliver: (event) => transport.publish(streamTopics.sessionChanged(event.orgId), event),
  });
}

/**
 * The event for a durable change, or undefined when the status did not move. Its id is the same on every node (it
 * is made here, once), so `Last-Event-ID` resumes on whichever node a client reconnects to.
 */
export function sessionEventOf(id: string, next: SessionState, previous: SessionState): (SessionEvent & { id: string }) | undefined {
  if (next.status === previous.status || next.spec === null) return undefined;
  return {
    id: `${next.updatedAt}.${id}.${next.epoch}.${next.status}`,
    sessionId: id, orgId: next.spec.orgId, projectId: next.spec.projectId,
    previousStatus: previous.status, status: next.status, epoch: next.epoch,
    at: new Date(next.updatedAt).toISOString(),
  };
}
