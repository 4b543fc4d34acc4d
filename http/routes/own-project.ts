import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import type { Action } from '../../actors/services/identity/authorizer.js';
import type { RouteAuthorization } from '../types.js';

/**
 * The authorization of a route on `/api/projects/:projectId/…` that acts on the project itself (its queue, budget,
 * concurrency): the project must be the caller's org's (else 404, before Cedar), then Cedar decides `action` on it.
 */
async function ownProject(projectId: string | undefined, deps: Deps, orgId: string): Promise<string> {
  if (projectId === undefined || !(await projectsInOrg(deps.db, orgId, [projectId])).has(projectId)) {
    throw new TroupeError('NOT_FOUND', 'project not found');
  }
  return projectId;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const onOwnProject = (action: Action): RouteAuthorization<Deps, any, string> => ({
  find: (req, deps, p) => ownProject(req.params.projectId, deps, p.orgId),
  action,
  resource: (_req, p, projectId) => ({ type: 'Project', id: projectId, orgId: p.orgId, projectId }),
});
