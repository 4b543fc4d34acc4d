import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { gateMessageSchema } from '../../../schemas/workflows/messages.js';
import { writeGate } from '../../../storage/workflows/runs.js';
import type { AskFn } from '../workflow-run/ports.js';
import { gateMachine, initialGateState, type GateEffect, type GateMsg, type GateState, type GateView } from './machine.js';

/**
 * The approval-gate actor: projects `approval_gates` with each change and, once decided, tells the run that
 * opened it. If that message is lost (a crash after the save), the run learns the decision when it re-opens
 * the gate on resume.
 */
export const APPROVAL_GATE_KIND = 'approval-gate';
export const approvalGateAddress = (id: string): string => `${APPROVAL_GATE_KIND}/${id}`;

export function createApprovalGateBehavior(ports: { ask: AskFn }): ActorBehavior<GateState, GateMsg, GateView, GateEffect> {
  return {
    kind: APPROVAL_GATE_KIND,
    initial: initialGateState,
    machine: gateMachine,
    messages: gateMessageSchema,
    async project(trx: Knex.Transaction, id: string, next: GateState) {
      if (next.status === 'absent') return;
      await writeGate(trx, id, next);
    },
    async afterPersist(effects, ctx) {
      for (const effect of effects) {
        try {
          await ports.ask(`workflow-run/${effect.runId}`, {
            type: 'run.gateDecided', gateId: effect.gateId, decision: effect.decision, ...(effect.driver ? { driver: effect.driver } : {}),
          });
        } catch (err) {
          ctx.log.warn({ err, runId: effect.runId }, 'could not tell the run about the decision; it learns it on resume');
        }
      }
    },
  };
}
