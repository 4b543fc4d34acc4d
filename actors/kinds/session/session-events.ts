import type { ActorBehavior } from '../../runtime/machine.js';
import { withAnnouncement } from '../../runtime/announce.js';
import type { Transport } from '../../../transport/port.js';
import { shownId, type SessionEffect, type SessionMsg, type SessionReply, type SessionState } from './machine.js';
import { streamTopics, type SessionEvent } from '../../services/fleet/node-streams.js';

/**
 * Publishes the session actor's status changes for `GET /api/sessions/events` (decision 0012), without touching
 * its machine: the change is announced from the turn that made it, once it is durable (`actors/runtime/announce.ts`).
 * Publishing never fails the session's turn. An event the transport refused (a broker down, or frozen and not yet
 * found out) is not silently lost either (issue 30): its org is owed a reset, published until the transport takes it,
 * and every node turns it into `event: reset` for that org's streams, so no client keeps a stale status unknowingly.
 */
type SessionBehavior = ActorBehavior<SessionState, SessionMsg, SessionReply, SessionEffect>;

export function withSessionEvents(behavior: SessionBehavior, transport: Transport | undefined): SessionBehavior {
  if (!transport) return behavior;
  const resets = new OwedResets(transport);
  return withAnnouncement(behavior, {
    effectType: 'sessionEvents.announce',
    announce: (previous, next, id) => sessionEventOf(id, next, previous),
    deliver: (event) => transport.publish(streamTopics.sessionChanged(event.orgId), event).catch((err: unknown) => {
      resets.owe(event.orgId);
      throw err;
    }),
  });
}

/** A reset of an org's session streams, published where its events go (node-streams.ts turns it into `lost`). */
export interface SessionStreamReset {
  readonly reset: true;
  readonly orgId: string;
}

/** How often an owed reset is published again, and for how long before it is given up (the broker never came back). */
const RESET_RETRY_MS = 1000;
const RESET_GIVE_UP_MS = 15 * 60_000;

/** The orgs whose session events this node failed to publish, each owed one reset once the transport takes it. */
class OwedResets {
  private readonly owed = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly transport: Transport) {}

  owe(orgId: string): void {
    if (!this.owed.has(orgId)) this.owed.set(orgId, Date.now());
    this.schedule();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.owed.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.publishAll().finally(() => this.schedule());
    }, RESET_RETRY_MS);
    this.timer.unref();
  }

  private async publishAll(): Promise<void> {
    for (const [orgId, since] of [...this.owed]) {
      if (Date.now() - since > RESET_GIVE_UP_MS) {
        this.owed.delete(orgId);
        continue;
      }
      const reset: SessionStreamReset = { reset: true, orgId };
      try {
        await this.transport.publish(streamTopics.sessionChanged(orgId), reset);
        this.owed.delete(orgId);
      } catch {
        return;
      }
    }
  }
}

/**
 * The event for a durable change, or undefined when the status did not move. Its id is the same on every node (it
 * is made here, once), so `Last-Event-ID` resumes on whichever node a client reconnects to.
 */
export function sessionEventOf(_key: string, next: SessionState, previous: SessionState): (SessionEvent & { id: string }) | undefined {
  if (next.status === previous.status || next.spec === null) return undefined;
  // Streams are per org, where the public id names the session (decision 0068).
  const sessionId = shownId(next);
  return {
    id: `${next.updatedAt}.${sessionId}.${next.epoch}.${next.status}`,
    sessionId, orgId: next.spec.orgId, projectId: next.spec.projectId,
    previousStatus: previous.status, status: next.status, epoch: next.epoch,
    at: new Date(next.updatedAt).toISOString(),
  };
}
