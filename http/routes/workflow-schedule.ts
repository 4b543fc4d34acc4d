import type { Deps } from '../../actors/services/deps.js';
import { CronSchedule } from '../../actors/kinds/workflow-schedule/cron.js';
import { findSchedule, recentFires } from '../../storage/workflows/schedules.js';
import { scheduleReply } from '../../schemas/workflows/http.js';
import type { Route } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal } from '../principal.js';
import { onWorkflow } from './own-workflow.js';

/** Fires listed ahead and behind (issue 17: "next fire times and the last ten fires and their runs"). */
const NEXT_FIRES = 5;
const LAST_FIRES = 10;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** A workflow's schedule as its actor last projected it (decision 0027). */
export function scheduleRoutes(): Route<Deps>[] {
  return [route({
    method: 'get', path: '/api/workflows/:id/schedule', auth: 'org', tags: ['workflows'],
    summary: "A workflow's schedule: whether it is active and whether paused, its cron expression and zone, the published version it fires, its next fire times, and its last ten fires with their runs",
    responseSchema: scheduleReply,
    authorize: onWorkflow('read'),
    async handler(req, deps, { found: w }) {
      const p = orgPrincipal(req);
      const [schedule, fires] = await Promise.all([findSchedule(deps.db, p.orgId, w.id), recentFires(deps.db, p.orgId, w.id, LAST_FIRES)]);
      const active = schedule?.status === 'active';
      const upcoming = active && schedule.nextFireAt !== null && schedule.cron !== null && schedule.timezone !== null
        ? [schedule.nextFireAt, ...new CronSchedule(schedule.cron, schedule.timezone).nextFires(schedule.nextFireAt, NEXT_FIRES - 1)]
        : [];
      return {
        body: {
          workflowId: w.id,
          status: schedule?.status ?? 'none',
          paused: schedule?.pausedAt != null,
          pausedAt: iso(schedule?.pausedAt ?? null),
          pausedBy: schedule?.pausedBy ?? null,
          cron: schedule?.cron ?? null,
          timezone: schedule?.timezone ?? null,
          overlap: schedule?.overlap ?? null,
          catchupWindowSeconds: schedule?.catchupWindowSeconds ?? null,
          version: schedule?.version ?? null,
          nextFireTimes: upcoming.map((at) => new Date(at).toISOString()),
          pendingFireTime: iso(schedule?.pendingFireAt ?? null),
          lastFires: fires.map((f) => ({
            fireTime: new Date(f.fireTime).toISOString(), version: f.version, outcome: f.outcome, runId: f.runId,
            runStatus: f.runStatus, detail: f.detail,
          })),
        },
      };
    },
  })];
}
