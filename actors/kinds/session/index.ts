import type { Registry } from 'prom-client';
import type { Transport } from '../../../transport/port.js';
import type { ActorBehavior } from '../../runtime/machine.js';
import { createSessionBehavior } from './actor.js';
import { withSessionEvents } from './session-events.js';
import { tellWorkerToStop, withWorkerSignals } from './worker-signals.js';
import { withLiveSessionReports } from '../workflow-run/live-session-reports.js';
import { withClaimWait } from '../../services/fleet/fleet-metrics.js';
import { withSessionPush, type PushOnEvents } from '../../services/integrations/web-push/event-notifications.js';
import type { SessionEffect, SessionMsg, SessionReply, SessionState } from './machine.js';

export { createSessionBehavior, SESSION_KIND, type SessionPorts, type WorkerStop } from './actor.js';
export {
  sessionMachine, initialSessionState, publicSessionId, sessionKey, shownId, publicIdPattern, newTrackerSessionId, isNewTrackerSessionId, sessionStatuses, sessionMsgTypes,
  terminalStatuses, liveStatuses, requestingRunId, RUN_REQUESTER_PREFIX, heldStatuses, reportableStatuses, isTerminal, isHeld, terminalKey, MAX_LEASE_RECLAIMS,
  type SessionState, type SessionMsg, type SessionReply, type SessionEffect, type SessionStatus, type SessionSpec,
} from './machine.js';

/** The address of one session's actor: by its key (schemas/sessions/session-ids.ts), never its public id, which two orgs may share. */
export const sessionAddress = (key: string): string => `session/${key}`;

export interface SessionKindPorts {
  readonly transport?: Transport;
  readonly pushOnEvents?: PushOnEvents;
  readonly metrics?: Registry;
  readonly auditRecorded?: () => void;
}

/**
 * The session kind as a node hosts it: the machine's own effects (its projection, the report to a workflow run, the
 * stop told to the worker, the stop's audit) plus the announcements derived from its changes, outermost first:
 * - workers hear of offers, polls and queued prompts on their daemon event stream (decision 0021), first after each
 *   change, before web push looks anything up;
 * - its claim wait is observed for the fleet's metrics (issue 20);
 * - its dispatcher is told by web push when it ends (issue 8 §5);
 * - status changes go to live session streams once durable (decision 0012);
 * - the live sessions of escalated gates report to the run whose driver requested them (decision 0069).
 */
export function createSessionKind(ports: SessionKindPorts): ActorBehavior<SessionState, SessionMsg, SessionReply, SessionEffect> {
  const { transport, pushOnEvents, metrics, auditRecorded } = ports;
  const tell = transport ? (address: string, message: unknown) => transport.tell(address, message) : undefined;
  const session = createSessionBehavior({
    ...(tell ? { tell } : {}),
    ...(transport ? { stopWorker: tellWorkerToStop(transport) } : {}),
    ...(auditRecorded ? { auditRecorded } : {}),
  });
  return withWorkerSignals(withClaimWait(withSessionPush(withSessionEvents(withLiveSessionReports(session, tell), transport), pushOnEvents), metrics), transport);
}
