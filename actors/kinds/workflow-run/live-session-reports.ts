import type { ActorBehavior } from '../../runtime/machine.js';
import { withAnnouncement } from '../../runtime/announce.js';
import { isTerminal, RUN_REQUESTER_PREFIX, type SessionEffect, type SessionMsg, type SessionReply, type SessionState } from '../session/machine.js';
import { workflowRunAddress } from './actor.js';
import type { RunMsg } from './machine.js';
import { runIdOfTrackerSessionId } from './ports.js';

/**
 * Reports the end of an escalated gate's live session to its run (decision 0069). The session actor reports only
 * sessions whose `requestedBy` names a run; a live session names its driver, the approver, so its run is read from its
 * tracker id (`workflow-run:<runId>:…`, ports.ts) instead, without touching the session machine: the report is
 * announced from the turn that ends the session, once it is durable (actors/runtime/announce.ts).
 * The report carries the session's org and requester; the run takes it only if they are its own and its driver's
 * (live-session.ts `isReportOf`), as a tracker id is something any client may send. A lost report is recovered the way
 * an agent step's is: on resume the run re-dispatches and learns the terminal status from the reply.
 */
type SessionBehavior = ActorBehavior<SessionState, SessionMsg, SessionReply, SessionEffect>;
type LiveSessionEnded = { readonly runId: string; readonly report: Extract<RunMsg, { type: 'run.agentFinished' }> };

export function withLiveSessionReports(behavior: SessionBehavior, tell: ((address: string, message: unknown) => Promise<void>) | undefined): SessionBehavior {
  if (!tell) return behavior;
  return withAnnouncement<SessionState, SessionMsg, SessionReply, SessionEffect, LiveSessionEnded>(behavior, {
    effectType: 'liveSessionReports.announce',
    announce: (previous, next, id) => liveSessionEnd(previous, next, id),
    deliver: (ended) => tell(workflowRunAddress(ended.runId), ended.report),
  });
}

/** Runs on every session turn (the hottest actor kind): the cheap test that it ended comes first. */
function liveSessionEnd(previous: SessionState, next: SessionState, id: string): LiveSessionEnded | undefined {
  if (!isTerminal(next.status) || (isTerminal(previous.status) && previous.epoch === next.epoch)) return undefined;
  const spec = next.spec;
  if (spec === null || spec.requestedBy.startsWith(RUN_REQUESTER_PREFIX)) return undefined;
  const runId = runIdOfTrackerSessionId(spec.trackerSessionId);
  if (runId === null) return undefined;
  return {
    runId,
    report: {
      type: 'run.agentFinished', sessionId: id, status: next.status, orgId: spec.orgId, requestedBy: spec.requestedBy,
      ...(next.error ? { error: next.error } : {}),
    },
  };
}
