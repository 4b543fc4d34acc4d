export { createSessionBehavior, SESSION_KIND, type SessionPorts } from './actor.js';
export {
  sessionMachine, initialSessionState, publicSessionId, sessionKey, shownId, publicIdPattern, newTrackerSessionId, isNewTrackerSessionId, sessionStatuses, sessionMsgTypes,
  terminalStatuses, liveStatuses, requestingRunId, RUN_REQUESTER_PREFIX, heldStatuses, reportableStatuses, isTerminal, isHeld, terminalKey, MAX_LEASE_RECLAIMS,
  type SessionState, type SessionMsg, type SessionReply, type SessionEffect, type SessionStatus, type SessionSpec,
} from './machine.js';

/** The address of one session's actor: by its key (schemas/sessions/session-ids.ts), never its public id, which two orgs may share. */
export const sessionAddress = (key: string): string => `session/${key}`;
