import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { daemonHostAddress, type DaemonHostReply } from '../../actors/kinds/daemon-host/index.js';
import { daemonServices } from '../../actors/services/daemon/services.js';
import { announceQueueControl } from '../../actors/kinds/session/worker-signals.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { workerInOrg } from '../../storage/sessions/daemon.js';
import { pauseWorker, pendingDrainOf, resumeWorker, type PauseChange } from '../../storage/queue-control/pauses.js';
import { workerDrainReply, workerPauseReply } from '../../schemas/queue-control/http.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import type { Route, RouteAuthorization } from '../types.js';

/**
 * One worker of the org (issue 36, decision 0079), as listed by `GET /api/fleet/workers`: paused, it is offered no new
 * session (its polls answer none, pushed offers skip it) while what it runs goes on; drained, it finishes its sessions
 * within its drain timeout and exits as on SIGTERM. Who may enqueue mutations for a worker (org admins and owners,
 * admin-scoped keys: Cedar `enqueue-mutation` on the DaemonHost) may do these. Another org's worker is 404.
 */

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const onWorker: RouteAuthorization<Deps, any, string> = {
  async find(req, deps, p) {
    const workerId = req.params.workerId ?? '';
    if (!uuidPattern.test(workerId) || !await workerInOrg(deps.db, p.orgId, workerId)) throw new TroupeError('NOT_FOUND', 'worker not found');
    return workerId;
  },
  action: 'enqueue-mutation',
  resource: (_req, p, workerId) => ({ type: 'DaemonHost', id: workerId, orgId: p.orgId }),
};

const reply = (workerId: string, change: PauseChange) => ({
  workerId, paused: change.pause !== null, pausedAt: change.pause?.pausedAt ?? null, pausedBy: change.pause?.pausedBy ?? null,
});

export function workerControlRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/workers/:workerId/pause', auth: 'org', tags: ['queue control', 'fleet'], bodyKind: 'none',
      summary: 'Pause a worker: it is offered no new session until resumed; the sessions it runs go on (org admins and owners)',
      description: 'Idempotent: pausing a paused worker answers the pause as it is and changes nothing. A change is audited '
        + '(`worker.paused`). The worker listing shows `paused`. A worker that re-registers under a new id is not paused.',
      responseSchema: workerPauseReply,
      authorize: onWorker,
      async handler(req, deps, { found: workerId }) {
        const p = orgPrincipal(req);
        const at = new Date(deps.clock.now());
        const by = requesterOf(p);
        const change = await pauseWorker(deps.db, p.orgId, workerId, by, at, (trx) => deps.services.audit.record({
          orgId: p.orgId, type: 'worker.paused', actor: by, subject: workerId, payload: { workerId }, at,
        }, trx));
        await announceQueueControl(deps, p.orgId, [{ kind: 'pausesChanged' }]);
        return { body: reply(workerId, change) };
      },
    }),
    route({
      method: 'post', path: '/api/workers/:workerId/resume', auth: 'org', tags: ['queue control', 'fleet'], bodyKind: 'none',
      summary: 'Resume a paused worker: it is offered work again and told to poll now (org admins and owners)',
      description: 'Idempotent: resuming a worker that is not paused changes nothing. A change is audited (`worker.resumed`). '
        + 'The worker is sent a `poll` event on its event stream, so it takes waiting work at once.',
      responseSchema: workerPauseReply,
      authorize: onWorker,
      async handler(req, deps, { found: workerId }) {
        const p = orgPrincipal(req);
        const at = new Date(deps.clock.now());
        const by = requesterOf(p);
        const change = await resumeWorker(deps.db, p.orgId, workerId, (trx) => deps.services.audit.record({
          orgId: p.orgId, type: 'worker.resumed', actor: by, subject: workerId, payload: { workerId }, at,
        }, trx));
        await announceQueueControl(deps, p.orgId, [{ kind: 'pausesChanged' }, { kind: 'pollWorker', workerId }]);
        return { body: reply(workerId, change) };
      },
    }),
    route({
      method: 'post', path: '/api/workers/:workerId/drain', auth: 'org', tags: ['queue control', 'fleet'], bodyKind: 'none', successStatus: 202,
      summary: 'Drain a worker: it takes no new work, lets its sessions finish within its drain timeout, stops the rest and exits 0, as on SIGTERM (org admins and owners)',
      description: 'Delivered as a `worker.drain` mutation with the worker\'s next heartbeat; a connected worker is nudged to '
        + 'send it at once. 202: asked, not yet done. Idempotent while undelivered: a second request answers the same '
        + 'mutation. Audited (`worker.drain_requested`). A worker run by a supervisor (systemd, Kubernetes) is restarted by '
        + 'it under the same identity and takes work again; cancel an undelivered drain with `POST /api/daemon/mutations/{id}/cancel`.',
      responseSchema: workerDrainReply,
      authorize: onWorker,
      async handler(req, deps, { found: workerId }) {
        const p = orgPrincipal(req);
        const waiting = await pendingDrainOf(deps.db, p.orgId, workerId);
        if (waiting !== undefined) return { status: 202, body: { workerId, mutation: waiting } };
        const by = requesterOf(p);
        const enqueued = await deps.ask<DaemonHostReply>(daemonHostAddress(workerId), {
          type: 'daemonHost.enqueue', mutationId: randomUUID(), op: 'worker.drain', params: {}, requestedBy: by,
        });
        if (enqueued.kind !== 'enqueued') throw new TroupeError('INTERNAL', 'unexpected reply to enqueue');
        // Nudges the worker's event stream to heartbeat now (a `mutation` event), wherever it is connected.
        daemonServices(deps).notePending(workerId, enqueued.pendingCount);
        // The mutation is durable already: an audit outbox that cannot be written is logged rather than failing the request.
        await deps.services.audit.recordOrLog({
          orgId: p.orgId, type: 'worker.drain_requested', actor: by, subject: workerId, payload: { workerId, mutationId: enqueued.mutation.id },
          at: new Date(deps.clock.now()),
        });
        return { status: 202, body: { workerId, mutation: enqueued.mutation } };
      },
    }),
  ];
}
