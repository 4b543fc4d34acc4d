import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { OrgPrincipal } from '../../actors/services/identity/principal.js';
import type { HttpRequest, Route } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal } from '../principal.js';
import { workflowAddress } from '../../actors/kinds/workflow/actor.js';
import { changeWorkflow } from '../../actors/kinds/workflow/change.js';
import { changeActorOf } from '../../actors/kinds/workflow/change-actor.js';
import { diffVersions } from '../../actors/kinds/workflow/diff.js';
import type { ContentChanges, WorkflowMsg, WorkflowView } from '../../actors/kinds/workflow/machine.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import {
  findVersion, listVersions, listWorkflows, type VersionRecord, type WorkflowRecord,
} from '../../storage/workflows/workflows.js';
import * as schemas from '../../schemas/workflows/http.js';
import { onWorkflow, workflowResource } from './own-workflow.js';
import { runRoutes } from './workflow-runs.js';
import { scheduleRoutes } from './workflow-schedule.js';

/**
 * Workflow routes (CONTRACT.md "Workflows", spec 4.4). Writes go to the workflow actor (`workflow/<id>`), which
 * snapshots every accepted change; reads come from the read models it projects. Another org's workflow is 404. A
 * change that publishes, republishes or unpublishes answers once its schedule reads accordingly (changeWorkflow).
 * Editing is Cedar `edit` on the Workflow; a change that leaves it published also needs `publish` (decision 0008).
 */



function fromView(view: WorkflowView) {
  const c = view.current;
  return {
    id: view.id, orgId: view.orgId, projectId: view.projectId, name: c.name, status: view.status, version: view.version,
    publishedVersion: view.publishedVersion, nodes: c.nodes, edges: c.edges, viewport: c.viewport,
    definitionYaml: c.definitionYaml, definitionVersion: c.definitionVersion, schemaHash: c.schemaHash,
    triggerConfig: c.triggerConfig, providerRequirements: c.providerRequirements, workflowConfig: c.workflowConfig,
    createdBy: view.createdBy, createdAt: view.createdAt, updatedAt: view.updatedAt,
  };
}

function fromRecords(w: WorkflowRecord, v: VersionRecord) {
  return {
    id: w.id, orgId: w.orgId, projectId: w.projectId, name: w.name, status: w.status, version: w.version,
    publishedVersion: w.publishedVersion, nodes: v.nodes, edges: v.edges, viewport: v.viewport,
    definitionYaml: v.definitionYaml, definitionVersion: v.definitionVersion, schemaHash: v.schemaHash,
    triggerConfig: v.triggerConfig, providerRequirements: v.providerRequirements, workflowConfig: v.workflowConfig,
    createdBy: w.createdBy, createdAt: w.createdAt, updatedAt: w.updatedAt,
  };
}

function contentChanges(body: Record<string, unknown>): ContentChanges {
  const keys = ['name', 'nodes', 'edges', 'viewport', 'definitionYaml', 'triggerConfig', 'providerRequirements', 'workflowConfig'] as const;
  return Object.fromEntries(keys.filter((k) => body[k] !== undefined).map((k) => [k, body[k]])) as ContentChanges;
}

const mayPublish = async (deps: Deps, p: OrgPrincipal, w: WorkflowRecord): Promise<boolean> =>
  (await deps.authz.check(p, 'publish', workflowResource(w))).allowed;

function versionParam(req: HttpRequest): number {
  const raw = req.params.version ?? '';
  if (!/^[1-9][0-9]{0,8}$/.test(raw)) throw new TroupeError('NOT_FOUND', 'no such version');
  return Number(raw);
}

export function workflowRoutes(): Route<Deps>[] {
  return [...workflowEditRoutes(), ...versionRoutes()];
}

function workflowEditRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/projects/:projectId/workflows', auth: 'org', tags: ['workflows'],
      summary: 'Create a workflow (version 1, draft)',
      bodySchema: schemas.createWorkflowBody, responseSchema: schemas.workflowReply, successStatus: 201,
      authorize: {
        async find(req, deps, p) {
          const projectId = req.params.projectId ?? '';
          if (!(await projectsInOrg(deps.db, p.orgId, [projectId])).has(projectId)) throw new TroupeError('NOT_FOUND', 'project not found');
          return { id: randomUUID(), projectId };
        },
        action: 'edit',
        resource: (_req, p, { id, projectId }) => ({ type: 'Workflow', id, orgId: p.orgId, projectId }),
      },
      async handler(req, deps, { found: { id, projectId } }) {
        const p = orgPrincipal(req);
        const msg: WorkflowMsg = {
          type: 'workflow.create', orgId: p.orgId, projectId,
          content: { ...contentChanges(req.body), name: req.body.name }, actor: changeActorOf(p),
        };
        const view = await deps.ask<WorkflowView>(workflowAddress(id), msg);
        return { status: 201, body: fromView(view) };
      },
    }),
    {
      method: 'get', path: '/api/workflows', auth: 'org', tags: ['workflows'],
      summary: 'List workflows of the caller\'s org, optionally of one project',
      querySchema: schemas.listWorkflowsQuery, responseSchema: schemas.listWorkflowsReply,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const projectId = req.query.get('projectId') ?? undefined;
        const all = await listWorkflows(deps.db, p.orgId, projectId);
        // Project-level access differs per project; decide once per project, not once per workflow.
        const readable = new Map<string, boolean>();
        const visible: WorkflowRecord[] = [];
        for (const w of all) {
          let ok = readable.get(w.projectId);
          if (ok === undefined) {
            ok = (await deps.authz.check(p, 'read', workflowResource(w))).allowed;
            readable.set(w.projectId, ok);
          }
          if (ok) visible.push(w);
        }
        return { body: { workflows: visible } };
      },
    },
    route({
      method: 'get', path: '/api/workflows/:id', auth: 'org', tags: ['workflows'],
      summary: 'Read a workflow with its current canvas and definition, and what the caller may do with it', responseSchema: schemas.workflowReadReply,
      authorize: onWorkflow('read'),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        const v = await findVersion(deps.db, p.orgId, w.id, w.version);
        if (!v) throw new TroupeError('NOT_FOUND', 'workflow not found');
        const [edit, publish, run] = await Promise.all(
          (['edit', 'publish', 'dispatch'] as const).map(async (action) => (await deps.authz.check(p, action, workflowResource(w))).allowed),
        );
        return { body: { ...fromRecords(w, v), can: { edit, publish, run } } };
      },
    }),
    route({
      method: 'patch', path: '/api/workflows/:id', auth: 'org', tags: ['workflows'],
      summary: 'Change a workflow (canvas, definition, status; status "published" publishes); every change is a new version',
      bodySchema: schemas.updateWorkflowBody, responseSchema: schemas.workflowReply,
      authorize: onWorkflow('edit'),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        const msg: WorkflowMsg = {
          type: 'workflow.update', orgId: p.orgId, changes: contentChanges(req.body), actor: changeActorOf(p),
          mayPublish: await mayPublish(deps, p, w),
          ...(req.body.status !== undefined ? { status: req.body.status } : {}),
          ...(req.body.changeReason !== undefined ? { changeReason: req.body.changeReason } : {}),
        };
        const view = await changeWorkflow(deps, w.id, msg);
        return { body: fromView(view) };
      },
    }),
  ];
}

function versionRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/workflows/:id/versions', auth: 'org', tags: ['workflows'],
      summary: 'Version summaries, newest first', responseSchema: schemas.versionSummaries,
      authorize: onWorkflow('read'),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        return { body: await listVersions(deps.db, p.orgId, w.id) };
      },
    }),
    route({
      method: 'get', path: '/api/workflows/:id/versions/:version', auth: 'org', tags: ['workflows'],
      summary: 'One version snapshot in full: canvas, definition YAML and who made it', responseSchema: schemas.versionReply,
      authorize: onWorkflow('read'),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        const v = await findVersion(deps.db, p.orgId, w.id, versionParam(req));
        if (!v) throw new TroupeError('NOT_FOUND', 'no such version');
        const { workflowId: _workflowId, orgId: _orgId, ...snapshot } = v;
        return { body: snapshot };
      },
    }),
    route({
      method: 'get', path: '/api/workflows/:id/versions/:version/diff', auth: 'org', tags: ['workflows'],
      summary: 'Compare version :version with version `compare` (required)',
      querySchema: schemas.diffQuery, responseSchema: schemas.versionDiffReply,
      authorize: onWorkflow('read'),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        const to = await findVersion(deps.db, p.orgId, w.id, versionParam(req));
        const from = await findVersion(deps.db, p.orgId, w.id, Number(req.query.get('compare')));
        if (!to || !from) throw new TroupeError('NOT_FOUND', 'no such version');
        return { body: diffVersions(from, to) };
      },
    }),
    route({
      method: 'post', path: '/api/workflows/:id/versions/:version/rollback', auth: 'org', tags: ['workflows'],
      summary: 'Restore version :version as a new version; history is untouched', responseSchema: schemas.workflowReply,
      bodyKind: 'none',
      authorize: onWorkflow('edit'),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        const v = await findVersion(deps.db, p.orgId, w.id, versionParam(req));
        if (!v) throw new TroupeError('NOT_FOUND', 'no such version');
        const msg: WorkflowMsg = {
          type: 'workflow.rollback', orgId: p.orgId, toVersion: v.version, actor: changeActorOf(p), mayPublish: await mayPublish(deps, p, w),
          content: {
            name: v.name, nodes: v.nodes, edges: v.edges, viewport: v.viewport, definitionYaml: v.definitionYaml,
            triggerConfig: v.triggerConfig, providerRequirements: v.providerRequirements, workflowConfig: v.workflowConfig,
          },
        };
        const view = await changeWorkflow(deps, w.id, msg);
        return { body: fromView(view) };
      },
    }),
    ...runRoutes(),
    ...scheduleRoutes(),
  ];
}
