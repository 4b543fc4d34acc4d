export { createDaemonHostBehavior, DAEMON_HOST_KIND } from './actor.js';
export {
  daemonHostMachine, initialDaemonHostState, daemonHostStatuses, daemonHostMsgTypes, mutationOps,
  mutationView, MAX_PENDING_MUTATIONS,
  type DaemonHostState, type DaemonHostMsg, type DaemonHostReply, type DaemonHostEffect, type MutationOp, type MutationView,
  type PendingMutation,
} from './machine.js';

/** The address of one worker daemon's actor. */
export const daemonHostAddress = (workerId: string): string => `daemon-host/${workerId}`;
