import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Route } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal } from '../principal.js';
import { onWorkflow } from './own-workflow.js';
import { analyseDefinition } from '../../actors/kinds/workflow/definition.js';
import { changeActorOf } from '../../actors/kinds/workflow/change-actor.js';
import { workflowRunAddress } from '../../actors/kinds/workflow-run/actor.js';
import type { RunMsg, RunView } from '../../actors/kinds/workflow-run/machine.js';
import { findVersion } from '../../storage/workflows/workflows.js';
import { findRun, listRunsOf } from '../../storage/workflows/runs.js';
import { publicIdsOfKeys } from '../../storage/sessions/queries.js';
import { decodeCursor, encodeCursor } from '../../storage/page-cursor.js';
import * as schemas from '../../schemas/workflows/http.js';

/**
 * The execution layer's surface (CONTRACT.md "Workflow runs"). A run is pinned when it starts: the handler reads
 * the workflow's published version and hands that version's compiled plan to the new run actor, which never
 * looks at the workflow again.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function runRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/workflows/:id/runs', auth: 'org', tags: ['workflows'], rateLimit: 'dispatch',
      summary: 'Start a run on the currently published version', bodySchema: schemas.startRunBody,
      responseSchema: schemas.startRunReply, successStatus: 201,
      authorize: onWorkflow('dispatch'),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        if (w.publishedVersion === null) throw new TroupeError('CONFLICT', `workflow is ${w.status}, not published`);
        const version = await findVersion(deps.db, p.orgId, w.id, w.publishedVersion);
        if (!version) throw new TroupeError('CONFLICT', 'published version is missing');
        const runId = randomUUID();
        const msg: RunMsg = {
          type: 'run.start', orgId: w.orgId, projectId: w.projectId, workflowId: w.id, version: version.version,
          plan: analyseDefinition(version.definitionYaml).plan, input: req.body?.input ?? {}, startedBy: changeActorOf(p).label,
          trigger: { kind: 'manual' },
        };
        const view = await deps.ask<RunView>(workflowRunAddress(runId), msg);
        return { status: 201, body: { runId, version: view.version, status: view.status } };
      },
    }),
    route({
      method: 'get', path: '/api/workflows/:id/runs', auth: 'org', tags: ['workflows'],
      summary: 'Runs of a workflow, newest first, each with how it started (manual, schedule with its fire time, webhook with its delivery), the version it is pinned to, its input and status; paged by cursor',
      querySchema: schemas.listRunsQuery, responseSchema: schemas.runListReply,
      authorize: onWorkflow('read', (w) => ({ type: 'WorkflowRun', id: 'list', orgId: w.orgId, projectId: w.projectId })),
      async handler(req, deps, { found: w }) {
        const p = orgPrincipal(req);
        const limit = Number(req.query.get('limit') ?? 20);
        const cursor = req.query.get('cursor');
        const rows = await listRunsOf(deps.db, p.orgId, w.id, limit + 1, cursor === null ? undefined : decodeCursor(cursor, UUID));
        const page = rows.slice(0, limit);
        const last = page[page.length - 1];
        return {
          body: {
            runs: page.map((r) => ({
              runId: r.id, version: r.version, status: r.status, startedBy: r.startedBy, error: r.error, createdAt: r.createdAt, updatedAt: r.updatedAt,
              trigger: r.trigger.kind, fireTime: r.trigger.fireTime ?? null, eventId: r.trigger.eventId ?? null, input: r.input,
            })),
            nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null,
          },
        };
      },
    }),
    route({
      method: 'get', path: '/api/workflow-runs/:runId', auth: 'org', tags: ['workflows'],
      summary: 'A run: its pinned version, status and steps', responseSchema: schemas.runReply,
      authorize: {
        async find(req, deps, p) {
          const run = await findRun(deps.db, p.orgId, req.params.runId ?? '');
          if (!run) throw new TroupeError('NOT_FOUND', 'run not found');
          return run;
        },
        action: 'read',
        resource: (_req, _p, run) => ({ type: 'WorkflowRun', id: run.id, orgId: run.orgId, projectId: run.projectId }),
      },
      async handler(req, deps, { found: run }) {
        // A run waits on its sessions by key; a client reads them by public id (decision 0068).
        const stored = run.steps as readonly { sessionId?: string }[];
        const shown = await publicIdsOfKeys(deps.db, run.orgId, stored.flatMap((s) => (s.sessionId ? [s.sessionId] : [])));
        const steps = stored.map((s) => (s.sessionId ? { ...s, sessionId: shown.get(s.sessionId) ?? s.sessionId } : s));
        return {
          body: {
            runId: run.id, workflowId: run.workflowId, version: run.version, status: run.status, steps,
            error: run.error, createdAt: run.createdAt, updatedAt: run.updatedAt,
          },
        };
      },
    }),
  ];
}
