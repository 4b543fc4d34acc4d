import type { Knex } from 'knex';
import type { ActorBehavior } from '../runtime/index.js';
import { startPinnedRun } from './workflow-run/start-pinned.js';
import type { Registry } from 'prom-client';
import type { Transport } from '../../transport/port.js';
import { createOrgBehavior } from './org/index.js';
import { publishRevocation } from '../services/identity/revocation.js';
import { createSessionKind } from './session/index.js';
import { createDaemonHostBehavior } from './daemon-host/index.js';
import { createWorkflowBehavior, type TriggerLimits } from './workflow/actor.js';
import { createWorkflowRunBehavior } from './workflow-run/actor.js';
import { createScheduleBehavior, type SchedulePorts } from './workflow-schedule/actor.js';
import { createApprovalGateBehavior } from './approval-gate/actor.js';
import { repositoryLookup, type AskFn } from './workflow-run/ports.js';
import { createPolicyBehavior } from './policy/index.js';
import { createIncidentBehavior } from './incident/index.js';
import { createTemplateBehavior } from './template/index.js';
import { createProposalBehavior } from './authoring/proposal-actor.js';
import { createProviderEventBehavior } from '../services/integrations/webhooks/actor.js';
import { createAgentCardBehavior } from './agent-card/index.js';
import { createExternalAgentBehavior } from '../services/integrations/a2a/index.js';
import { dispatchBudget } from '../services/budgets/budgets.js';
import { withGatePush, type PushOnEvents } from '../services/integrations/web-push/event-notifications.js';
import { withDecisionAnnounced } from '../services/governance/approval-waits.js';

/**
 * Every actor kind this node hosts. The composition root registers each with the actor system; a message for a kind
 * not listed here is refused. Each room appends its behaviour (one line per kind). Kinds whose effects publish
 * events take the transport from `ports`, and web push its node service.
 */
export interface ActorKindPorts {
  readonly transport?: Transport;
  /** The node's web push on events; kinds are not wrapped without it. */
  readonly pushOnEvents?: PushOnEvents;
  /** The node's registry, for the fleet's claim-wait histogram; not observed without it. */
  readonly metrics?: Registry;
  /** The node's schedule service (timers, run starts); without it schedules neither arm timers nor start runs. */
  readonly schedules?: SchedulePorts;
  /** Storage, for effects that read a workflow version to start a run of it (webhook triggers). */
  readonly db?: Knex;
  /** The operator's bounds on published triggers; unbounded without them. */
  readonly triggerLimits?: TriggerLimits;
  /** Wakes the audit outbox's drain once an entry a transition recorded has committed (a session's stop). */
  readonly auditRecorded?: () => void;
  /** Deadline of asks between actors (run → gate, gate → run, run → session) that name none: the node's `askTimeoutMs`. */
  readonly askTimeoutMs: number;
}

/** Schedules on a node without the schedule service: they decide fires, and the starts wait for a node that has one. */
const noSchedules: SchedulePorts = {
  arm: () => undefined,
  startRun: () => Promise.reject(new Error('no schedule service on this node')),
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function actorKinds(ports: ActorKindPorts): ActorBehavior<any, any, any, any>[] {
  const { transport, pushOnEvents, metrics, schedules, db, triggerLimits } = ports;
  const ask: AskFn = <R>(address: string, message: unknown, timeoutMs?: number) => {
    if (!transport) return Promise.reject(new Error(`no transport to reach ${address}`));
    return transport.ask<R>(address, message, { timeoutMs: timeoutMs ?? ports.askTimeoutMs });
  };
  return [
    createOrgBehavior(transport ? { publishRevocation: (tags) => publishRevocation(transport, tags) } : {}),
    createSessionKind({ transport, pushOnEvents, metrics, ...(ports.auditRecorded ? { auditRecorded: ports.auditRecorded } : {}) }),
    // Announces pending-mutation counts on `daemon.pending`, keeping every node's heartbeat index exact (decision 0007).
    createDaemonHostBehavior(transport ? { transport } : {}),
    // Each version's deployment reaches the workflow's schedule from the change's asker (decisions 0027, 0071).
    createWorkflowBehavior(triggerLimits ? { triggerLimits } : {}),
    // An agent node may name a repository of the run's project, found when the node runs (decision 0075), and starts
    // nothing in a project over its monthly budget (decision 0080).
    createWorkflowRunBehavior({ ask, ...(db ? { repositories: repositoryLookup(db), budget: dispatchBudget(db) } : {}) }),
    createScheduleBehavior(schedules ?? noSchedules),
    // An opened gate is pushed to the subscribed users who may decide it (issue 8 §5).
    withDecisionAnnounced(withGatePush(createApprovalGateBehavior({ ask }), pushOnEvents), transport),
    createPolicyBehavior(),
    createIncidentBehavior(),
    createTemplateBehavior(),
    createProposalBehavior(),
    // A delivery matching published webhook triggers starts their runs (decision 0027).
    createProviderEventBehavior(db ? { ask, startRun: (start) => startPinnedRun({ db, ask }, start), budget: dispatchBudget(db) } : { ask }),
    createAgentCardBehavior(),
    createExternalAgentBehavior(),
  ];
}
