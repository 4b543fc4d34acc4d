import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { scheduleMessageSchema } from '../../../schemas/workflows/messages.js';
import { writeFires, writeSchedule } from '../../../storage/workflows/schedules.js';
import { appendAudit } from '../../../storage/audit-log.js';
import {
  initialScheduleState, scheduleMachine, type ScheduleEffect, type ScheduleMsg, type ScheduleReply, type ScheduleState,
} from './machine.js';

/**
 * The schedule actor (`workflow-schedule/<workflowId>`). Its projection keeps `workflow_schedules` and the fire rows
 * in step with its state, in the snapshot transaction, with the audit entry of a pause or resume; `afterPersist` arms this node's timer for the next fire and
 * starts the pending fire's run, then reports the outcome to itself as `schedule.fired`.
 */
export const WORKFLOW_SCHEDULE_KIND = 'workflow-schedule';
export const workflowScheduleAddress = (workflowId: string): string => `${WORKFLOW_SCHEDULE_KIND}/${workflowId}`;

export type StartRunEffect = Extract<ScheduleEffect, { type: 'startRun' }>;
export interface StartRunOutcome {
  readonly outcome: 'started' | 'skipped-overlap' | 'failed';
  readonly detail?: string;
}

/** What the actor needs of its node: the schedule service (actors/services/schedules/service.ts). */
export interface SchedulePorts {
  /** Wakes `workflow-schedule/<workflowId>` at `at` through the transport. */
  arm(workflowId: string, at: number): void;
  /** Starts the fire's run, or decides it is skipped; throws when it could not tell (the next tick retries). */
  startRun(workflowId: string, effect: StartRunEffect): Promise<StartRunOutcome>;
}

export function createScheduleBehavior(ports: SchedulePorts): ActorBehavior<ScheduleState, ScheduleMsg, ScheduleReply, ScheduleEffect> {
  return {
    kind: WORKFLOW_SCHEDULE_KIND,
    initial: initialScheduleState,
    machine: scheduleMachine,
    messages: scheduleMessageSchema,
    async project(trx: Knex.Transaction, id: string, next: ScheduleState, _previous: ScheduleState, effects: readonly ScheduleEffect[]) {
      if (next.status === 'absent') return;
      await writeSchedule(trx, {
        workflowId: id, orgId: next.orgId, projectId: next.projectId, appliedVersion: next.appliedVersion, status: next.status,
        version: next.version, cron: next.config.cron, timezone: next.config.timezone, overlap: next.config.overlap,
        catchupWindowSeconds: next.config.catchupWindowSeconds, nextFireAt: next.nextFireAt,
        pendingFireAt: next.pending?.fireTime ?? null, lastRunId: next.lastRunId,
        pausedAt: next.paused?.at ?? null, pausedBy: next.paused?.by ?? null, updatedAt: next.updatedAt,
      });
      for (const effect of effects) {
        if (effect.type === 'recordFires') await writeFires(trx, id, next.orgId, effect.fires, new Date(next.updatedAt));
        if (effect.type === 'audit') {
          await appendAudit(trx, {
            orgId: next.orgId, type: effect.event, actor: effect.by, subject: id,
            payload: { workflowId: id, projectId: next.projectId, ...(effect.event === 'workflow.schedule_resumed' ? { firesSkippedAtResume: effect.skipped } : {}) },
            at: new Date(next.updatedAt),
          });
        }
      }
    },
    async afterPersist(effects, ctx) {
      for (const effect of effects) {
        if (effect.type === 'arm') ports.arm(ctx.id, effect.at);
        if (effect.type !== 'startRun') continue;
        const { fire } = effect;
        try {
          const result = await ports.startRun(ctx.id, effect);
          ctx.tellSelf({ type: 'schedule.fired', fireTime: fire.fireTime, runId: fire.runId, outcome: result.outcome, ...(result.detail ? { detail: result.detail } : {}) });
        } catch (err) {
          // Left pending: the schedule service's scan ticks it again and the same run is started then.
          ctx.log.warn({ err, fireTime: new Date(fire.fireTime).toISOString(), runId: fire.runId }, 'could not start a scheduled run; will retry');
        }
      }
    },
  };
}
