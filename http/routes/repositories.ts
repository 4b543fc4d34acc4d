import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import {
  createRepository, deleteRepository, listRepositories, MAX_REPOSITORIES_PER_PROJECT, type RepositoryRecord,
} from '../../storage/repositories/repositories.js';
import { createRepositoryBody, repositoryDeletedReply, repositoryListReply, repositoryView } from '../../schemas/repositories/http.js';
import {
  DEFAULT_BRANCH, defaultRepositoryName, repositoryNameProblem, repositoryUrlProblem,
} from '../../schemas/repositories/repository.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import type { Route, RouteAuthorization } from '../types.js';

/**
 * A project's repositories (issue 34, decision 0075): what its sessions may run on. Readers of the project list them;
 * editors and admins (Cedar `edit` on a Repository) register and remove them, each change audited. Another org's
 * project, or a repository of another project, is 404.
 */

/** The project of the path in the caller's org, or 404 (absent, malformed, or another org's). */
async function ownProject(projectId: string | undefined, deps: Deps, orgId: string): Promise<string> {
  if (projectId === undefined || !(await projectsInOrg(deps.db, orgId, [projectId])).has(projectId)) {
    throw new TroupeError('NOT_FOUND', 'project not found');
  }
  return projectId;
}

const onRepository = (action: 'read' | 'edit', id: (params: Record<string, string | undefined>) => string): RouteAuthorization<Deps, any, string> => ({
  find: (req, deps, p) => ownProject(req.params.projectId, deps, p.orgId),
  action,
  resource: (req, p, projectId) => ({ type: 'Repository', id: id(req.params), orgId: p.orgId, projectId }),
});

const view = (r: RepositoryRecord) => ({ id: r.id, url: r.url, name: r.name, defaultBranch: r.defaultBranch, createdAt: r.createdAt });

export function repositoryRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/projects/:projectId/repositories', auth: 'org', tags: ['repositories'], successStatus: 201,
      summary: `Register a repository the project's sessions may run on (project editors and admins); name and URL unique in the project (409), at most ${MAX_REPOSITORIES_PER_PROJECT} per project (409)`,
      bodySchema: createRepositoryBody, responseSchema: repositoryView,
      authorize: onRepository('edit', () => 'new'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const url = req.body.url;
        const urlProblem = repositoryUrlProblem(url, deps.config.allowFileRepositories);
        if (urlProblem !== null) throw new TroupeError('VALIDATION_FAILED', `url: ${urlProblem}`, { field: 'url' });
        const name = req.body.name ?? defaultRepositoryName(url);
        const nameProblem = repositoryNameProblem(name);
        if (nameProblem !== null) {
          const why = req.body.name === undefined ? `the name taken from the URL ("${name.slice(0, 100)}") ${nameProblem}; pass a name` : nameProblem;
          throw new TroupeError('VALIDATION_FAILED', `name: ${why}`, { field: 'name' });
        }
        const at = new Date(deps.clock.now());
        const outcome = await createRepository(deps.db, {
          id: randomUUID(), orgId: p.orgId, projectId, name, url, defaultBranch: req.body.defaultBranch ?? DEFAULT_BRANCH, createdBy: requesterOf(p), at,
        }, (trx, r) => deps.services.audit.record({
          orgId: p.orgId, type: 'repository.created', actor: requesterOf(p), subject: r.id, payload: { projectId, name: r.name, url: r.url }, at,
        }, trx));
        switch (outcome.kind) {
          case 'taken':
            throw new TroupeError('ALREADY_EXISTS', `the project already has a repository with this ${outcome.field}`, { field: outcome.field });
          case 'full':
            throw new TroupeError('CONFLICT', `the project already has ${MAX_REPOSITORIES_PER_PROJECT} repositories; remove one first`);
          case 'created':
            return { status: 201, body: view(outcome.repository) };
        }
      },
    }),
    route({
      method: 'get', path: '/api/projects/:projectId/repositories', auth: 'org', tags: ['repositories'],
      summary: "The project's repositories, oldest first (project readers)",
      responseSchema: repositoryListReply,
      authorize: onRepository('read', () => 'list'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        return { body: { repositories: (await listRepositories(deps.db, p.orgId, projectId)).map(view) } };
      },
    }),
    route({
      method: 'delete', path: '/api/projects/:projectId/repositories/:id', auth: 'org', tags: ['repositories'],
      summary: 'Remove a repository from the project (project editors and admins); sessions already dispatched on it keep running on it; 404 for one the project does not have',
      responseSchema: repositoryDeletedReply,
      authorize: onRepository('edit', (params) => params.id ?? ''),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const at = new Date(deps.clock.now());
        const removed = await deleteRepository(deps.db, p.orgId, projectId, req.params.id ?? '', (trx, r) => deps.services.audit.record({
          orgId: p.orgId, type: 'repository.deleted', actor: requesterOf(p), subject: r.id, payload: { projectId, name: r.name, url: r.url }, at,
        }, trx));
        if (!removed) throw new TroupeError('NOT_FOUND', 'repository not found');
        return { body: { id: removed.id, deleted: true } };
      },
    }),
  ];
}
