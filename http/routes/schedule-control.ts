import type { Deps } from '../../actors/services/deps.js';
import { workflowScheduleAddress } from '../../actors/kinds/workflow-schedule/actor.js';
import type { ScheduleMsg, ScheduleReply } from '../../actors/kinds/workflow-schedule/machine.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { findSchedule } from '../../storage/workflows/schedules.js';
import { schedulePauseReply } from '../../schemas/workflows/http.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import type { Route } from '../types.js';
import { onWorkflow } from './own-workflow.js';

/**
 * Pausing a workflow's schedule (issue 36, decision 0079). The schedule actor decides: while paused, each fire that
 * comes due starts no run and is listed `skipped-paused` in `GET /api/workflows/{id}/schedule`; resuming never runs
 * them late. Who may publish the workflow (Cedar `publish` on it) may pause and resume its schedule; another org's
 * workflow is 404; a workflow never published with a schedule trigger has no schedule to pause (409).
 */

const NO_SCHEDULE = 'the workflow has no schedule: publish it with a schedule trigger first';

async function control(deps: Deps, orgId: string, workflowId: string, message: ScheduleMsg): Promise<ScheduleReply> {
  // The read model is written with the schedule's snapshot, so a schedule absent here has never been configured.
  if (await findSchedule(deps.db, orgId, workflowId) === undefined) throw new TroupeError('CONFLICT', NO_SCHEDULE);
  return deps.ask<ScheduleReply>(workflowScheduleAddress(workflowId), message);
}

const replyOf = (workflowId: string, r: ScheduleReply) => ({
  workflowId, paused: r.paused !== null,
  pausedAt: r.paused === null ? null : new Date(r.paused.at).toISOString(), pausedBy: r.paused?.by ?? null,
});

export function scheduleControlRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/workflows/:id/schedule/pause', auth: 'org', tags: ['workflows', 'queue control'], bodyKind: 'none',
      summary: "Pause a workflow's schedule: fires due while paused start no run and are recorded skipped-paused (who may publish the workflow)",
      description: 'Idempotent: pausing a paused schedule answers the pause as it is and changes nothing. A change is audited '
        + '(`workflow.schedule_paused`). A fire already being started when the pause arrives still finishes. Republishing '
        + 'keeps the pause. 409 for a workflow without a schedule.',
      responseSchema: schedulePauseReply,
      authorize: onWorkflow('publish'),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        return { body: replyOf(w.id, await control(deps, p.orgId, w.id, { type: 'schedule.pause', orgId: p.orgId, by: requesterOf(p) })) };
      },
    }),
    route({
      method: 'post', path: '/api/workflows/:id/schedule/resume', auth: 'org', tags: ['workflows', 'queue control'], bodyKind: 'none',
      summary: "Resume a paused schedule: it fires again from its next fire after now; fires skipped while paused are not replayed (who may publish the workflow)",
      description: 'Idempotent: resuming a schedule that is not paused changes nothing. A change is audited '
        + '(`workflow.schedule_resumed`); fires that came due while paused and had not been recorded yet are recorded '
        + 'skipped-paused by the resume itself. 409 for a workflow without a schedule.',
      responseSchema: schedulePauseReply,
      authorize: onWorkflow('publish'),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        return { body: replyOf(w.id, await control(deps, p.orgId, w.id, { type: 'schedule.resume', orgId: p.orgId, by: requesterOf(p) })) };
      },
    }),
  ];
}
