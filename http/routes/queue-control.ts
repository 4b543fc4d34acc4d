import type { Deps } from '../../actors/services/deps.js';
import { announceQueueControl, type WorkerSignal } from '../../actors/kinds/session/worker-signals.js';
import { pauseProjectQueue, projectQueue, resumeProjectQueue, type PauseChange } from '../../storage/queue-control/pauses.js';
import { projectWeight, setProjectWeight } from '../../storage/queue-control/fair-turns.js';
import { projectQueueBody, projectQueuePauseReply, projectQueueReply } from '../../schemas/queue-control/http.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import { onOwnProject } from './own-project.js';
import type { Route } from '../types.js';

/**
 * A project's queue (issue 36, decision 0079): paused, its pending sessions are offered to no worker (neither by a
 * poll nor pushed on the event stream) while sessions already claimed run on and dispatch still queues; resumed, the
 * project's workers are told to poll at once. Who may publish in the project (org admins and owners, project admins,
 * admin-scoped keys) may pause and resume it: Cedar `publish` on the Project. Its readers see the queue. Another org's
 * project is 404. Its weight in the org's fair offer rounds (decision 0085) is the org's call, like its concurrency and
 * budget: Cedar `manage-org`.
 */

const reply = (projectId: string, change: PauseChange) => ({
  projectId, paused: change.pause !== null, pausedAt: change.pause?.pausedAt ?? null, pausedBy: change.pause?.pausedBy ?? null,
});

const WEIGHT_DESCRIPTION = 'Within the org, projects with pending sessions are offered in turns, least recently served '
  + 'first; a turn offers up to `weight` sessions of the project (highest priority first, first come first served within a '
  + 'priority). A change is audited (`queue.weight_changed`, with the weight before and after); setting what is set changes nothing.';

const PAUSE_DESCRIPTION = 'Idempotent: pausing a paused queue answers the pause as it is (who paused it and when) and changes '
  + 'nothing. Each change is audited (`queue.paused`). A session offered before the pause may still be claimed by the worker '
  + 'that was offered it; nothing is offered after this answer.';
const RESUME_DESCRIPTION = 'Idempotent: resuming a queue that is not paused changes nothing. A change is audited '
  + '(`queue.resumed`). The project\'s connected workers are sent a `poll` event, so a free worker claims a waiting session '
  + 'at once rather than at its next poll.';

async function queueView(deps: Deps, orgId: string, projectId: string) {
  const [queue, weight] = await Promise.all([projectQueue(deps.db, orgId, projectId), projectWeight(deps.db, orgId, projectId)]);
  return { ...reply(projectId, { pause: queue.pause, changed: false }), pending: queue.pending, weight };
}

export function queueControlRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/projects/:projectId/queue/pause', auth: 'org', tags: ['queue control'], bodyKind: 'none',
      summary: "Pause the project's queue: its pending sessions are offered to no worker until resumed; running sessions go on and dispatch still queues (org admins and owners, project admins)",
      description: PAUSE_DESCRIPTION,
      responseSchema: projectQueuePauseReply,
      authorize: onOwnProject('publish'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const at = new Date(deps.clock.now());
        const by = requesterOf(p);
        const change = await pauseProjectQueue(deps.db, p.orgId, projectId, by, at, (trx) => deps.services.audit.record({
          orgId: p.orgId, type: 'queue.paused', actor: by, subject: projectId, payload: { projectId }, at,
        }, trx));
        await announceQueueControl(deps, p.orgId, [{ kind: 'pausesChanged' }]);
        return { body: reply(projectId, change) };
      },
    }),
    route({
      method: 'post', path: '/api/projects/:projectId/queue/resume', auth: 'org', tags: ['queue control'], bodyKind: 'none',
      summary: "Resume the project's queue: its waiting sessions are offered again and its workers told to poll now (org admins and owners, project admins)",
      description: RESUME_DESCRIPTION,
      responseSchema: projectQueuePauseReply,
      authorize: onOwnProject('publish'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const at = new Date(deps.clock.now());
        const by = requesterOf(p);
        const change = await resumeProjectQueue(deps.db, p.orgId, projectId, (trx) => deps.services.audit.record({
          orgId: p.orgId, type: 'queue.resumed', actor: by, subject: projectId, payload: { projectId }, at,
        }, trx));
        // The pauses first, then the nudge: a node reads the pauses again before the poll it asks for can be answered.
        const signals: WorkerSignal[] = [{ kind: 'pausesChanged' }, { kind: 'poll', projectId }];
        await announceQueueControl(deps, p.orgId, signals);
        return { body: reply(projectId, change) };
      },
    }),
    route({
      method: 'get', path: '/api/projects/:projectId/queue', auth: 'org', tags: ['queue control'],
      summary: "The project's queue: whether it is paused (by whom, since when) and how many sessions wait in it (project readers)",
      responseSchema: projectQueueReply,
      authorize: onOwnProject('read'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        return { body: await queueView(deps, p.orgId, projectId) };
      },
    }),
    route({
      method: 'put', path: '/api/projects/:projectId/queue', auth: 'org', tags: ['queue control'],
      summary: "Set the project's weight in its org's fair offer rounds (org admins and owners)",
      description: WEIGHT_DESCRIPTION,
      bodySchema: projectQueueBody,
      responseSchema: projectQueueReply,
      authorize: onOwnProject('manage-org'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const at = new Date(deps.clock.now());
        const by = requesterOf(p);
        const after = req.body.weight;
        await setProjectWeight(deps.db, p.orgId, projectId, after, by, at, (before) => (trx) => deps.services.audit.record({
          orgId: p.orgId, type: 'queue.weight_changed', actor: by, subject: projectId, payload: { projectId, before, after }, at,
        }, trx));
        return { body: await queueView(deps, p.orgId, projectId) };
      },
    }),
  ];
}
