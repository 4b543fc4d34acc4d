import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { OrgPrincipal } from '../../actors/services/identity/principal.js';
import type { ResourceRef } from '../../actors/services/identity/ports.js';
import type { Action } from '../../actors/services/identity/authorizer.js';
import type { RouteAuthorization } from '../types.js';
import { findWorkflow, type WorkflowRecord } from '../../storage/workflows/workflows.js';

/**
 * One authorization for routes on a workflow (its versions, runs and schedule): the caller's org's workflow or 404,
 * then Cedar's action on it, shared by ./workflows.ts, ./workflow-runs.ts and ./workflow-schedule.ts.
 */

export const workflowResource = (w: { id: string; orgId: string; projectId: string }): ResourceRef =>
  ({ type: 'Workflow', id: w.id, orgId: w.orgId, projectId: w.projectId });

/** The workflow, or 404 when it is absent or another org's. */
export async function loadWorkflow(deps: Deps, p: OrgPrincipal, id: string | undefined): Promise<WorkflowRecord> {
  const workflow = id === undefined ? undefined : await findWorkflow(deps.db, p.orgId, id);
  if (!workflow) throw new TroupeError('NOT_FOUND', 'workflow not found');
  return workflow;
}

/**
 * `action` on the workflow `:id` names (or on what `resource` derives from it), found in the caller's org first (404
 * otherwise); the handler gets the workflow as `found`.
 */
export const onWorkflow = (
  action: Action, resource: (w: WorkflowRecord) => ResourceRef = workflowResource,
): RouteAuthorization<Deps, any, WorkflowRecord> => ({
  find: (req, deps, p) => loadWorkflow(deps, p, req.params.id),
  action,
  resource: (_req, _p, w) => resource(w),
});
