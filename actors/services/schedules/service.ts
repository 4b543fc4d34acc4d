import type { Deps } from '../deps.js';
import type { NodeService } from '../node-service.js';
import { unappliedScheduleDeployments, type Deployment } from '../../../storage/workflows/triggers.js';
import { schedulesNeedingTick } from '../../../storage/workflows/schedules.js';
import { workflowScheduleAddress, type SchedulePorts, type StartRunEffect, type StartRunOutcome } from '../../kinds/workflow-schedule/actor.js';
import type { ScheduleMsg } from '../../kinds/workflow-schedule/machine.js';
import { startScheduledRun } from './start-run.js';

/** Schedules handed their deployment, and ticked, per scan; more wait for the next scan. */
const SCAN_BATCH = 500;

/**
 * This node's part in running schedules (decision 0027), `deps.services.schedules`:
 * - timers: the node that decides a fire arms a timer for the schedule's next one, which tells the schedule actor
 *   `schedule.tick` through the transport at that instant (so it reaches whoever owns it by then);
 * - a scan every `TROUPE_SCHEDULE_SCAN_MS`, on every node: deployments a schedule has not applied yet (the change's own
 *   hand-off lost in a crash, or failed) are handed over again, and schedules whose fire is overdue by a scan
 *   period, or whose run start is unconfirmed as long, are ticked. That is how a fire survives the death of the node
 *   whose timer would have woken it: the shard moves, a survivor's scan ticks, the new owner fires.
 * Ticks are idempotent (a schedule fires only what is due and persists the next fire before acting), so every node
 * scanning at once, and a timer racing a scan, start nothing twice.
 */
export class WorkflowSchedules implements NodeService, SchedulePorts {
  readonly name = 'workflow-schedules';
  private deps: Deps | undefined;
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private scanTimer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;

  start(deps: Deps): void {
    this.deps = deps;
    this.scanTimer = setInterval(() => {
      this.scanning ??= this.scan()
        .then(() => undefined, (err: unknown) => deps.log.warn({ err }, 'schedule scan failed'))
        .finally(() => { this.scanning = undefined; });
    }, deps.config.scheduleScanMs);
    this.scanTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.scanTimer);
    this.scanTimer = undefined;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await this.scanning;
    this.deps = undefined;
  }

  /** One timer per schedule, for its nearest fire; re-arming for the same instant keeps the timer there is. */
  arm(workflowId: string, at: number): void {
    const deps = this.deps;
    if (deps === undefined) return; // not started yet, or stopping: the scans of the running nodes cover it
    const existing = this.timers.get(workflowId);
    if (existing?.at === at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      if (this.timers.get(workflowId)?.timer === timer) this.timers.delete(workflowId);
      this.tick(deps, workflowId);
    }, Math.max(0, at - deps.clock.now()));
    timer.unref();
    this.timers.set(workflowId, { at, timer });
  }

  startRun(workflowId: string, effect: StartRunEffect): Promise<StartRunOutcome> {
    if (this.deps === undefined) return Promise.reject(new Error('the schedule service is not running on this node'));
    return startScheduledRun(this.deps, workflowId, effect);
  }

  /** One scan; exported through the instance for tests and operators. */
  async scan(): Promise<{ configured: number; ticked: number }> {
    const deps = this.deps;
    if (deps === undefined) return { configured: 0, ticked: 0 };
    const deployments = await unappliedScheduleDeployments(deps.db, SCAN_BATCH);
    for (const d of deployments) {
      await deps.transport.tell(workflowScheduleAddress(d.workflowId), configureMessage(d))
        .catch((err: unknown) => deps.log.warn({ err, workflowId: d.workflowId }, 'could not hand a deployment to its schedule'));
    }
    const now = deps.clock.now();
    const overdue = new Date(now - deps.config.scheduleScanMs);
    const due = await schedulesNeedingTick(deps.db, overdue, overdue, SCAN_BATCH);
    for (const workflowId of due) this.tick(deps, workflowId);
    return { configured: deployments.length, ticked: due.length };
  }

  private tick(deps: Deps, workflowId: string): void {
    const tick: ScheduleMsg = { type: 'schedule.tick' };
    deps.transport.tell(workflowScheduleAddress(workflowId), tick)
      .catch((err: unknown) => deps.log.warn({ err, workflowId }, 'could not tick a schedule'));
  }
}

/** What a schedule is told of a deployment, by the change that made it (actors/kinds/workflow/change.ts) and by the scan alike. */
export function configureMessage(d: Pick<Deployment, 'orgId' | 'projectId' | 'workflowVersion' | 'publishedVersion' | 'trigger'>): ScheduleMsg {
  return {
    type: 'schedule.configure', orgId: d.orgId, projectId: d.projectId, workflowVersion: d.workflowVersion,
    publishedVersion: d.publishedVersion, trigger: d.trigger,
  };
}
