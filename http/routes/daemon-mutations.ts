import { randomUUID } from 'node:crypto';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { daemonHostAddress, type DaemonHostReply } from '../../actors/kinds/daemon-host/index.js';
import { daemonServices } from '../../actors/services/daemon/services.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import { findMutation, mutationHistory, workerInOrg } from '../../storage/sessions/daemon.js';
import { enqueueMutationBody, mutationViewSchema } from '../../schemas/sessions/daemon.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import type { Route } from '../types.js';
import { route } from '../route.js';

/**
 * The operator's mutation queue of a daemon host (spec 4.2): enqueue, cancel while undelivered, and the history. A
 * mutation reaches its worker on the worker's next heartbeat (daemon.ts).
 */

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function mutationRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post',
      path: '/api/daemon/mutations',
      auth: 'org',
      summary: 'Enqueue a configuration mutation for one daemon host, delivered on its next heartbeat (org admin or owner)',
      tags: ['daemon'],
      bodySchema: enqueueMutationBody,
      successStatus: 201,
      responseSchema: { type: 'object', required: ['mutation'], properties: { mutation: mutationViewSchema } },
      // Cedar is asked before the host is looked up (an unknown host is 404 only to those allowed to enqueue).
      authorize: { action: 'enqueue-mutation', resource: (req, p) => ({ type: 'DaemonHost', id: req.body.workerHostId, orgId: p.orgId }) },
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const body = req.body;
        if (!uuidPattern.test(body.workerHostId) || !await workerInOrg(deps.db, p.orgId, body.workerHostId)) {
          throw new TroupeError('NOT_FOUND', 'daemon host not found', { field: 'workerHostId' });
        }
        if (body.op === 'project.add' || body.op === 'project.remove') {
          const projectId = body.params.projectId as string;
          if (!(await projectsInOrg(deps.db, p.orgId, [projectId])).has(projectId)) {
            throw new TroupeError('NOT_FOUND', 'project not found', { field: 'params.projectId' });
          }
        }
        const reply = await deps.ask<DaemonHostReply>(daemonHostAddress(body.workerHostId), {
          type: 'daemonHost.enqueue', mutationId: randomUUID(), op: body.op, params: body.params, requestedBy: requesterOf(p),
        });
        if (reply.kind !== 'enqueued') throw new TroupeError('INTERNAL', 'unexpected reply to enqueue');
        daemonServices(deps).notePending(body.workerHostId, reply.pendingCount);
        return { status: 201, body: { mutation: reply.mutation } };
      },
    }),
    route({
      method: 'post',
      path: '/api/daemon/mutations/:id/cancel',
      auth: 'org',
      summary: 'Cancel an undelivered mutation (409 once delivered or cancelled; 404 unknown or of another org)',
      tags: ['daemon'],
      bodyKind: 'none',
      responseSchema: { type: 'object', required: ['mutation'], properties: { mutation: mutationViewSchema } },
      authorize: {
        async find(req, deps, p) {
          const id = req.params.id ?? '';
          const found = uuidPattern.test(id) ? await findMutation(deps.db, p.orgId, id) : undefined;
          if (!found) throw new TroupeError('NOT_FOUND', 'mutation not found');
          return found;
        },
        action: 'enqueue-mutation',
        resource: (req, p) => ({ type: 'Mutation', id: req.params.id ?? '', orgId: p.orgId }),
      },
      async handler(req, deps, { found }) {
        const id = req.params.id ?? '';
        const workerHostId = found.workerHostId as string;
        if (found.status !== 'pending') throw new TroupeError('CONFLICT', `the mutation is already ${String(found.status)}`);
        // Through the actor: a heartbeat delivering it at the same moment is ordered against this, one wins.
        const reply = await deps.ask<DaemonHostReply>(daemonHostAddress(workerHostId), { type: 'daemonHost.cancel', mutationId: id });
        if (reply.kind !== 'cancelled') throw new TroupeError('INTERNAL', 'unexpected reply to cancel');
        daemonServices(deps).notePending(workerHostId, reply.pendingCount);
        return { body: { mutation: reply.mutation } };
      },
    }),
    route({
      method: 'get',
      path: '/api/daemon/mutations',
      auth: 'org',
      summary: 'Mutation history of one daemon host, newest first',
      tags: ['daemon'],
      querySchema: { type: 'object', required: ['workerHostId'], properties: { workerHostId: { type: 'string', minLength: 1, maxLength: 64 } } },
      responseSchema: { type: 'object', required: ['mutations'], properties: { mutations: { type: 'array', items: mutationViewSchema } } },
      // Cedar is asked before the host is looked up, as for enqueueing.
      authorize: { action: 'read', resource: (req, p) => ({ type: 'DaemonHost', id: req.query.get('workerHostId')!, orgId: p.orgId }) },
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const workerHostId = req.query.get('workerHostId')!;
        if (!uuidPattern.test(workerHostId) || !await workerInOrg(deps.db, p.orgId, workerHostId)) {
          throw new TroupeError('NOT_FOUND', 'daemon host not found');
        }
        return { body: { mutations: await mutationHistory(deps.db, p.orgId, workerHostId) } };
      },
    }),
  ];
}
