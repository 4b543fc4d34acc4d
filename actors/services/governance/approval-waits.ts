import type { Transport } from '../../../transport/port.js';
import type { Logger } from '../../../ops/kernel/logger.js';
import type { ActorBehavior } from '../../runtime/machine.js';
import { withAnnouncement } from '../../runtime/announce.js';
import type { GateEffect, GateMsg, GateState, GateView } from '../../kinds/approval-gate/machine.js';
import type { NodeService } from '../node-service.js';
import type { Deps } from '../deps.js';
import { Nudges } from '../nudges.js';

/**
 * Agents waiting for a person's decision (decision 0088): a wait on a request wakes when its gate is decided or its
 * session changes (a stop ends the wait), on any node, instead of reading both every half second. The gate actor
 * announces a decision after it is durable (`withDecisionAnnounced`); the session actor's changed events already
 * cross the cluster. A nudge only says "look again": the waiter reads the gate and the session, so a lost nudge costs
 * the wait its fallback look, never a wrong answer.
 */
export const approvalDecidedTopic = (orgId: string): string => `org.${orgId}.approval.decided`;

const gateChannel = (orgId: string, gateId: string): string => `${orgId}/gate/${gateId}`;
const sessionChannel = (orgId: string, sessionId: string): string => `${orgId}/session/${sessionId}`;

const eventMember = (event: unknown, name: string): string | undefined => {
  const value = (event as Record<string, unknown> | null)?.[name];
  return typeof value === 'string' ? value : undefined;
};

export class ApprovalWaits implements NodeService {
  readonly name = 'approval-waits';
  private readonly nudges: Nudges;

  constructor(transport: Transport, log: Logger) {
    const orgOf = (topic: string) => topic.split('.')[1] ?? '';
    this.nudges = new Nudges(transport, log, [
      {
        pattern: 'org.*.approval.decided',
        channelOf: (topic, event) => { const gateId = eventMember(event, 'gateId'); return gateId && gateChannel(orgOf(topic), gateId); },
      },
      {
        pattern: 'org.*.session.changed',
        channelOf: (topic, event) => { const sessionId = eventMember(event, 'sessionId'); return sessionId && sessionChannel(orgOf(topic), sessionId); },
      },
    ]);
  }

  start(): void {}

  /** Resolves once this node hears decisions; a wait awaits it before its first read, so none falls between. */
  ready(): Promise<void> {
    return this.nudges.ready();
  }

  /** Resolves when the gate may have been decided or the session may have changed, or after `ms`. */
  next(orgId: string, gateId: string, sessionId: string, ms: number): Promise<void> {
    return this.nudges.until([gateChannel(orgId, gateId), sessionChannel(orgId, sessionId)], ms);
  }

  /** Waits on this node now: for tests. */
  waitingOn(orgId: string, gateId: string): number {
    return this.nudges.listenersOf(gateChannel(orgId, gateId));
  }

  stop(): Promise<void> {
    return this.nudges.stop();
  }
}

type GateBehavior = ActorBehavior<GateState, GateMsg, GateView, GateEffect>;

/** The gate kind announcing each decision on the org's `approval.decided` topic once it is durable. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function withDecisionAnnounced(behavior: ActorBehavior<GateState, GateMsg, GateView, any>, transport: Transport | undefined): GateBehavior {
  if (!transport) return behavior;
  return withAnnouncement(behavior, {
    effectType: 'approvalGate.decisionAnnounced',
    announce: (state, next, id) => (state.status === 'pending' && next.status !== 'pending' && 'orgId' in next ? { orgId: next.orgId, gateId: id } : undefined),
    deliver: (event) => transport.publish(approvalDecidedTopic(event.orgId), { gateId: event.gateId }),
  });
}

/** The node's approval waits (`deps.services.approvalWaits`). */
export const approvalWaits = (deps: Pick<Deps, 'services'>): ApprovalWaits => deps.services.approvalWaits;
