import type { TransitionStatement } from '../../../storage/transition-statement.js';
import type { ActorBehavior } from '../../runtime/machine.js';
import { sessionMessageSchema } from '../../../schemas/sessions/session-actor.js';
import { chain, projectSessionStatement } from '../../../storage/sessions/projection.js';
import { sessionAnalyticsStatement } from '../../../storage/analytics/session-facts.js';
import { sessionMachine, initialSessionState, isNewTrackerSessionId, type SessionEffect, type SessionMsg, type SessionReply, type SessionState } from './machine.js';

/**
 * The session actor: the pure machine of ./machine.ts plus its projection. Every effect of a transition is a
 * read-model write committed with the snapshot (storage/sessions/projection.ts), so "exactly once per terminal
 * transition" is the snapshot's own version fence plus the ledger key; nothing runs after the reply.
 */
export const SESSION_KIND = 'session';

/**
 * What the session actor reaches outside itself: `tell` delivers to another actor through the transport
 * (a workflow run waiting for this session's terminal status). Without it (unit tests) nothing is reported.
 */
export interface SessionPorts {
  readonly tell?: (address: string, message: unknown) => Promise<void>;
  /** Tells the worker that held the session to end its agent (./worker-signals.ts); without it nothing is told. */
  readonly stopWorker?: (orgId: string, stop: WorkerStop) => Promise<void>;
  /** Wakes the audit outbox's drain after a stop's entry committed; it drains on its own schedule without it. */
  readonly auditRecorded?: () => void;
}

/** The `stop` a worker hears on its daemon event stream (decision 0021). */
export interface WorkerStop { readonly workerId: string; readonly sessionId: string; readonly status: string; readonly reason: string }

export function createSessionBehavior(ports: SessionPorts = {}): ActorBehavior<SessionState, SessionMsg, SessionReply, SessionEffect> {
  return {
    kind: SESSION_KIND,
    initial: initialSessionState,
    machine: sessionMachine,
    messages: sessionMessageSchema,
    neverWritten: (msg) => msg.type === 'session.dispatch' && isNewTrackerSessionId(msg.trackerSessionId),
    // The hottest projection of a node: parts of the snapshot's own statement (decisions 0045, 0055).
    projectStatement(statement: TransitionStatement, id: string, next: SessionState, previous: SessionState, effects: readonly SessionEffect[]) {
      const own = projectSessionStatement(statement, id, next, previous, effects, next.updatedAt);
      // Phase records, the run's outcome and its router arm (decision 0013): with the transition, so exactly once.
      const analytics = sessionAnalyticsStatement(statement, id, next, previous, effects, next.updatedAt);
      return chain([own, analytics].filter((f) => f !== undefined));
    },
    async afterPersist(effects, ctx) {
      for (const effect of effects) {
        if (effect.type === 'stopRecorded') ports.auditRecorded?.();
        if (effect.type === 'workerStopped' && ports.stopWorker) {
          const { workerId, status, reason } = effect;
          // Best effort: a worker that missed it learns of the stop on its next poll or report (decision 0021).
          await ports.stopWorker(effect.orgId, { workerId, sessionId: effect.sessionId, status, reason })
            .catch((err: unknown) => ctx.log.warn({ err, workerId }, 'could not tell the worker to stop'));
        }
        if (effect.type !== 'notifyRun' || !ports.tell) continue;
        // A lost tell (crash right here) is recovered by the run itself: on resume it re-dispatches, and a
        // dispatch onto a terminal session answers the terminal status (actors/kinds/workflow-run/actor.ts).
        const finished = {
          type: 'run.agentFinished', sessionId: ctx.id, status: effect.status, ...(effect.error ? { error: effect.error } : {}),
        };
        await ports.tell(`workflow-run/${effect.runId}`, finished)
          .catch((err: unknown) => ctx.log.warn({ err, runId: effect.runId }, 'could not report the session outcome to its workflow run'));
      }
    },
  };
}
