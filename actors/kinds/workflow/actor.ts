import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { workflowMessageSchema } from '../../../schemas/workflows/messages.js';
import { appendAudit } from '../../../storage/audit-log.js';
import { writeVersion } from '../../../storage/workflows/workflows.js';
import { writeDeployment } from '../../../storage/workflows/triggers.js';
import { CronSchedule } from '../workflow-schedule/cron.js';
import { assertTriggerQuota } from '../../../storage/workflows/trigger-quota.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import {
  workflowMachine, initialWorkflowState, type Deployment, type WorkflowEffect, type WorkflowMsg, type WorkflowState, type WorkflowView,
} from './machine.js';

/**
 * The workflow actor (`workflow/<id>`). Its projection appends the version snapshot, moves the `workflows` read
 * model, records what the execution layer is deployed with (`workflow_triggers`), and appends
 * `workflow.version_created` to the org's audit chain, all in the snapshot transaction: a version exists, is listed,
 * is deployed and is audited together, or not at all. The workflow's schedule hears of the deployment from whoever
 * asked for the change, before that change is answered (./change.ts, decision 0071), and from the schedule service's
 * scan should that asker die first (decision 0027).
 */
export const WORKFLOW_KIND = 'workflow';
export const workflowAddress = (id: string): string => `${WORKFLOW_KIND}/${id}`;

export interface WorkflowPorts {
  /** The operator's bounds on published triggers (issue 30); unbounded without them. */
  readonly triggerLimits?: TriggerLimits;
}

export interface TriggerLimits {
  /** Published schedules one org may have at once. */
  readonly schedulesPerOrg: number;
  /** The shortest time between two fires of one schedule. */
  readonly minIntervalSeconds: number;
  /** Published workflows with a webhook trigger one org may have at once. */
  readonly webhookWorkflowsPerOrg: number;
}

export function createWorkflowBehavior(ports: WorkflowPorts = {}): ActorBehavior<WorkflowState, WorkflowMsg, WorkflowView, WorkflowEffect> {
  return {
    kind: WORKFLOW_KIND,
    initial: initialWorkflowState,
    machine: workflowMachine,
    messages: workflowMessageSchema,
    async project(trx: Knex.Transaction, id: string, next: WorkflowState, _previous: WorkflowState, effects: readonly WorkflowEffect[]) {
      if (next.status === 'absent') return;
      for (const effect of effects) {
        const s = effect.snapshot;
        await writeVersion(trx, {
          id, orgId: next.orgId, projectId: next.projectId, name: next.current.name, status: next.status,
          version: next.version, publishedVersion: next.publishedVersion, createdBy: next.createdBy,
          createdAt: next.createdAt, updatedAt: s.createdAt,
        }, {
          ...s, workflowId: id, orgId: next.orgId,
          nodes: [...s.nodes], edges: [...s.edges], viewport: { ...s.viewport },
          triggerConfig: { ...s.triggerConfig }, providerRequirements: [...s.providerRequirements], workflowConfig: { ...s.workflowConfig },
        });
        if (ports.triggerLimits) await assertTriggerWithinLimits(trx, id, effect.deployment, ports.triggerLimits);
        await writeDeployment(trx, { workflowId: id, ...effect.deployment }, new Date(s.createdAt));
        await appendAudit(trx, {
          orgId: next.orgId,
          type: 'workflow.version_created',
          actor: effect.actorId,
          subject: id,
          payload: { workflowId: id, version: s.version, changedBy: s.changedBy, changeReason: s.changeReason, status: s.status, schemaHash: s.schemaHash },
          at: new Date(s.createdAt),
        });
      }
    },
  };
}

/**
 * A published schedule fires no more often than the operator allows, and neither it nor a webhook-triggered workflow
 * is one too many for its org (issue 30: 50 schedules of `* * * * * *` started 50 runs a second). Checked when the
 * version is written, so every way of publishing (an edit, a status change, a rollback) meets it, with a 400 or 409
 * that names the limit.
 */
async function assertTriggerWithinLimits(trx: Knex.Transaction, workflowId: string, deployment: Deployment, limits: TriggerLimits): Promise<void> {
  const trigger = deployment.trigger;
  if (deployment.publishedVersion === null) return;
  if (trigger.type === 'webhook') {
    await assertTriggerQuota(trx, deployment.orgId, workflowId, {
      kind: 'webhook', max: limits.webhookWorkflowsPerOrg, what: 'webhook-triggered workflows', variable: 'TROUPE_WEBHOOK_WORKFLOWS_PER_ORG',
    });
    return;
  }
  if (trigger.type !== 'schedule') return;
  const shortest = new CronSchedule(trigger.cron, trigger.timezone).shortestInterval(0);
  if (shortest < limits.minIntervalSeconds * 1000) {
    throw new TroupeError('VALIDATION_FAILED', `field 'definitionYaml.trigger.cron' fires every ${shortest / 1000} s, more often than the limit of `
      + `once every ${limits.minIntervalSeconds} s (TROUPE_SCHEDULE_MIN_INTERVAL_SECONDS)`, { field: 'definitionYaml.trigger.cron' });
  }
  await assertTriggerQuota(trx, deployment.orgId, workflowId, {
    kind: 'schedule', max: limits.schedulesPerOrg, what: 'schedules', variable: 'TROUPE_SCHEDULES_PER_ORG',
  });
}
