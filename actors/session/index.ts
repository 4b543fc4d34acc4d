export { createSessionBehavior, SESSION_KIND, type SessionPorts } from './actor.js';
export {
  sessionMachine, initialSessionState, publicSessionId, publicIdPattern, newTrackerSessionId, isNewTrackerSessionId, sessionStatuses, sessionMsgTypes,
  terminalStatuses, liveStatuses, requestingRunId, RUN_REQUESTER_PREFIX, heldStatuses, reportableStatuses, isTerminal, isHeld, terminalKey, MAX_LEASE_RECLAIMS,
  type SessionState, type SessionMsg, type SessionReply, type SessionEffect, type SessionStatus, type SessionSpec,
} from './machine.js';

/** The address of one session's actor. */
export const sessionAddress = (publicId: string): string => `session/${publicId}`;
