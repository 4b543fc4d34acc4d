import type { Deps } from '../../deps.js';
import type { NodeService } from '../../node-service.js';
import type { Principal } from '../../identity/principal.js';
import { withAnnouncement } from '../../../runtime/announce.js';
import type { ActorBehavior } from '../../../runtime/machine.js';
import type { GateEffect, GateMsg, GateState, GateView } from '../../../kinds/approval-gate/machine.js';
import { isTerminal, shownId, type SessionEffect, type SessionMsg, type SessionReply, type SessionState } from '../../../kinds/session/machine.js';
import { subscribedMembers } from '../../../../storage/integrations/web-push.js';
import { notifyUser, type PushNotification } from './send.js';
import { vapidKeys } from './vapid.js';

/**
 * Web push on events (issue 8 §5): an approval gate that opens notifies every subscribed org user whose role may
 * decide it (asked of the authorizer, so stored policies and required roles count exactly as at decide time);
 * a session reaching a terminal status notifies the user who dispatched it.
 *
 * The behaviours are wrapped without touching their machines (as `withSessionEvents` does): the wrapper adds an
 * announcement effect to the turn that made the change and sends only from `afterPersist`, so nothing is announced
 * that is not durable, and the send is detached — a slow or failing push service never holds the actor's mailbox
 * or fails its turn. Sending needs the node's dependencies, which exist only after the actor kinds are registered;
 * the wrappers hold the node's `PushOnEvents` (`deps.services.pushOnEvents`), which the node binds to its
 * dependencies when it starts the service, and until then, or after it stops, events are not pushed.
 */
export class PushOnEvents implements NodeService {
  readonly name = 'web-push-events';
  private deps: Deps | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  start(deps: Deps): void {
    this.deps = deps;
  }

  async stop(): Promise<void> {
    this.deps = undefined;
    await Promise.allSettled([...this.inFlight]);
  }

  send(what: string, work: (deps: Deps) => Promise<void>): void {
    const deps = this.deps;
    if (!deps || !vapidKeys(deps)) return;
    const p = work(deps)
      .catch((err: unknown) => deps.log.warn({ err }, `web push for ${what} failed`))
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }
}

/** Org users with a push subscription whose role lets them decide the gate. */
async function gateDeciders(deps: Deps, gateId: string, gate: Extract<GateState, { orgId: string }>): Promise<string[]> {
  const members = await subscribedMembers(deps.db, gate.orgId);
  const resource = {
    type: 'ApprovalGate', id: gateId, orgId: gate.orgId,
    ...(gate.projectId ? { projectId: gate.projectId } : {}),
    ...(gate.requiredRole ? { attrs: { requiredRole: gate.requiredRole } } : {}),
  };
  const allowed: string[] = [];
  for (const m of members) {
    const principal: Principal = { kind: 'user', userId: m.userId, orgId: gate.orgId, orgRole: m.role, via: 'token' };
    if ((await deps.authz.check(principal, 'decide', resource)).allowed) allowed.push(m.userId);
  }
  return allowed;
}

/**
 * Announces through the runtime's combinator (`actors/runtime/announce.ts`): the send is handed to this node's
 * notifier only after the change is durable, and runs in the background so a slow push service never holds the actor.
 */
function withPushAnnouncement<S, M extends { type: string }, R, E extends { type: string }, T>(
  behavior: ActorBehavior<S, M, R, E>, push: PushOnEvents,
  announce: (state: S, next: S, id: string) => T | undefined, send: (event: T) => [string, (deps: Deps) => Promise<void>],
): ActorBehavior<S, M, R, E> {
  return withAnnouncement(behavior, {
    effectType: 'webPush.announce',
    announce,
    deliver: async (event) => {
      const [what, work] = send(event);
      push.send(what, work);
    },
  });
}

type GateBehavior = ActorBehavior<GateState, GateMsg, GateView, GateEffect>;
type OpenGate = Extract<GateState, { orgId: string }>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function withGatePush(behavior: GateBehavior, push: PushOnEvents | undefined): ActorBehavior<GateState, GateMsg, GateView, any> {
  if (!push) return behavior;
  return withPushAnnouncement(behavior, push,
    (state, next, id) => (state.status === 'absent' && next.status === 'pending' ? { id, gate: next as OpenGate } : undefined),
    (event) => ['an opened approval gate', async (deps) => {
      const notification: PushNotification = {
        title: 'Approval needed', body: event.gate.title, tag: `approval-gate:${event.id}`, url: `/approvals/${event.id}`,
      };
      for (const userId of await gateDeciders(deps, event.id, event.gate)) {
        // One user's failure (their push service, a broken subscription) must not keep the others from hearing.
        await notifyUser(deps, event.gate.orgId, userId, notification)
          .catch((err: unknown) => deps.log.warn({ err, userId }, 'web push to one decider failed'));
      }
    }]);
}

type SessionBehavior = ActorBehavior<SessionState, SessionMsg, SessionReply, SessionEffect>;

/** Sessions dispatched by a user record `user:<userId>` as their requester (keys, machines and webhooks do not). */
const USER_REQUESTER = /^user:([0-9a-f-]{36})$/;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function withSessionPush(behavior: SessionBehavior, push: PushOnEvents | undefined): ActorBehavior<SessionState, SessionMsg, SessionReply, any> {
  if (!push) return behavior;
  return withPushAnnouncement(behavior, push,
    (state, next) => {
      const userId = next.spec ? USER_REQUESTER.exec(next.spec.requestedBy)?.[1] : undefined;
      if (!next.spec || userId === undefined || next.status === state.status || !isTerminal(next.status)) return undefined;
      return { id: shownId(next), orgId: next.spec.orgId, userId, status: next.status, prompt: next.spec.prompt };
    },
    (event) => ['an ended session', async (deps) => {
      await notifyUser(deps, event.orgId, event.userId, {
        title: `Session ${event.status}`, body: event.prompt.slice(0, 200), tag: `session:${event.id}`, url: `/sessions/${event.id}`,
      });
    }]);
}
