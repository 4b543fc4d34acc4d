import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { runMessageSchema } from '../../../schemas/workflows/messages.js';
import { writeRun } from '../../../storage/workflows/runs.js';
import { approvalGateAddress } from '../approval-gate/actor.js';
import type { GateMsg, GateView } from '../approval-gate/machine.js';
import { runMachine, initialRunState, type RunEffect, type RunMsg, type RunState, type RunView } from './machine.js';
import { sessionDispatch, type RunPorts } from './ports.js';

/**
 * The workflow-run actor. `project` keeps the `workflow_runs` read model in step with the state; `afterPersist`
 * opens gates, dispatches agent sessions and arms wait timers. Each effect is idempotent by its derived id, so
 * `run.resume` after a restart may repeat it safely.
 */
export const WORKFLOW_RUN_KIND = 'workflow-run';
export const workflowRunAddress = (id: string): string => `${WORKFLOW_RUN_KIND}/${id}`;

/** Session statuses that end an agent step (actors/kinds/session/machine.ts `terminalStatuses`). */
const terminalSessionStatuses: ReadonlySet<string> = new Set(['completed', 'failed', 'stopped']);

/** The run's own report of a session it dispatched; a live session's names its org and driver, as the run requires. */
function finished(effect: Extract<RunEffect, { type: 'dispatchAgent' }>, status: string, error?: string): RunMsg {
  return {
    type: 'run.agentFinished', sessionId: effect.sessionId, status, ...(error ? { error } : {}),
    ...(effect.requestedBy ? { orgId: effect.orgId, requestedBy: effect.requestedBy } : {}),
  };
}

export function createWorkflowRunBehavior(ports: RunPorts): ActorBehavior<RunState, RunMsg, RunView, RunEffect> {
  const dispatchAgent = ports.dispatchAgent ?? sessionDispatch(ports.ask, ports.repositories, ports.budget);
  return {
    kind: WORKFLOW_RUN_KIND,
    initial: initialRunState,
    machine: runMachine,
    messages: runMessageSchema,
    async project(trx: Knex.Transaction, id: string, next: RunState) {
      if (next.status === 'absent') return;
      await writeRun(trx, {
        id, orgId: next.orgId, projectId: next.projectId, workflowId: next.workflowId, version: next.version,
        status: next.status, steps: next.steps, error: next.error, startedBy: next.startedBy,
        trigger: next.trigger ?? { kind: 'manual' }, input: next.input,
        createdAt: next.createdAt, updatedAt: next.updatedAt,
      });
    },
    async afterPersist(effects, ctx) {
      for (const effect of effects) {
        switch (effect.type) {
          case 'schedule':
            // A timer in this process; if the process dies first, the boot-time resume re-arms it from the snapshot.
            setTimeout(() => ctx.tellSelf({ type: 'run.wake', token: effect.token }), effect.delayMs).unref();
            break;
          case 'openGate': {
            const open: GateMsg = {
              type: 'gate.open', orgId: effect.orgId, projectId: effect.projectId, title: effect.title, issue: null,
              sessionId: null, runId: effect.runId, nodeId: effect.nodeId,
              escalation: effect.escalation === 'live-session' ? 'live-session' : null,
              requiredRole: (effect.requiredRole as 'owner' | 'admin' | 'member' | undefined) ?? null,
            };
            try {
              const gate = await ports.ask<GateView>(approvalGateAddress(effect.gateId), open);
              // A gate decided while this run was not listening (a restart in between): take the decision now.
              if (gate.status !== 'pending') {
                ctx.tellSelf({ type: 'run.gateDecided', gateId: effect.gateId, decision: gate.status, ...(gate.driver ? { driver: gate.driver } : {}) });
              }
            } catch (err) {
              ctx.log.warn({ err, gateId: effect.gateId }, 'could not open approval gate; run.resume will retry');
            }
            break;
          }
          case 'dispatchAgent':
            try {
              const dispatched = await dispatchAgent(effect);
              // The session ended while this run was not listening (its report lost in a crash): take the outcome now.
              if (dispatched && terminalSessionStatuses.has(dispatched.status)) ctx.tellSelf(finished(effect, dispatched.status));
            } catch (err) {
              const reason = err instanceof TroupeError ? `${err.code}: ${err.message}` : 'dispatch failed';
              ctx.log.warn({ err, sessionId: effect.sessionId }, 'agent dispatch failed');
              ctx.tellSelf(finished(effect, 'failed', `session could not be dispatched (${reason})`));
            }
            break;
        }
      }
    },
  };
}
