import type { Deps } from '../../actors/services/deps.js';
import { announceQueueControl } from '../../actors/kinds/session/worker-signals.js';
import { projectConcurrency, setProjectConcurrency } from '../../storage/queue-control/concurrency.js';
import { projectConcurrencyBody, projectConcurrencyReply, type ProjectConcurrency } from '../../schemas/queue-control/concurrency.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import { onOwnProject } from './own-project.js';
import type { Route } from '../types.js';

/**
 * A project's concurrency per key (issue 36, decision 0081). How many agents may work one branch or one issue at once
 * is the org's call, like its budget: Cedar `manage-org` on the Project (org admins and owners, admin-scoped keys);
 * project admins, members and viewers get 403. Its readers see it. Another org's project is 404.
 */

const reply = (projectId: string, setting: ProjectConcurrency | null) => ({
  projectId, configured: setting !== null, defaultLimit: setting?.defaultLimit ?? null, strategy: setting?.strategy ?? null,
});

const PUT_DESCRIPTION = 'Limits how many sessions of one concurrency key hold a claim at once. A session\'s key is the '
  + '`concurrencyKey` its dispatch named, else `repo:<repository id>:<ref or default branch>` or `issue:<trackerIssue>`. '
  + 'A change is audited (`project.concurrency.changed`, with the setting before and after); setting what is set changes '
  + 'nothing. The project\'s workers are told to poll, so sessions a raised limit lets through are claimed at once.';

export function concurrencyControlRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'put', path: '/api/projects/:projectId/concurrency', auth: 'org', tags: ['queue control'],
      summary: "Set the project's limit per concurrency key and what happens to a session past it (org admins and owners)",
      description: PUT_DESCRIPTION,
      bodySchema: projectConcurrencyBody,
      responseSchema: projectConcurrencyReply,
      authorize: onOwnProject('manage-org'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const at = new Date(deps.clock.now());
        const by = requesterOf(p);
        const after: ProjectConcurrency = { defaultLimit: req.body.defaultLimit, strategy: req.body.strategy };
        const before = await projectConcurrency(deps.db, p.orgId, projectId);
        const { changed } = await setProjectConcurrency(deps.db, p.orgId, projectId, after, by, at, (trx) => deps.services.audit.record({
          orgId: p.orgId, type: 'project.concurrency.changed', actor: by, subject: projectId, payload: { projectId, before, after }, at,
        }, trx));
        // Nodes read which projects limit keys with the pauses (a keyed session of such a project is not pushed); then
        // the poll, where a raised limit lets waiting sessions through.
        if (changed) await announceQueueControl(deps, p.orgId, [{ kind: 'pausesChanged' }, { kind: 'poll', projectId }]);
        return { body: reply(projectId, after) };
      },
    }),
    route({
      method: 'get', path: '/api/projects/:projectId/concurrency', auth: 'org', tags: ['queue control'],
      summary: "The project's limit per concurrency key and its strategy; `configured: false` while none is set (project readers)",
      responseSchema: projectConcurrencyReply,
      authorize: onOwnProject('read'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        return { body: reply(projectId, await projectConcurrency(deps.db, p.orgId, projectId)) };
      },
    }),
  ];
}
