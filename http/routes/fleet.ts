import type { Deps } from '../../actors/services/deps.js';
import { daemonServices } from '../../actors/services/daemon/services.js';
import { fleetStats } from '../../actors/services/fleet/stats.js';
import { listWorkers, MAX_WORKERS_LISTED } from '../../actors/services/fleet/workers.js';
import { fleetStatsReply, workerListReply } from '../../schemas/daemon-extras/bodies.js';
import { orgPrincipal } from '../principal.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';

/** Fleet statistics (spec 4.8, 5.3): not anonymous; an API key, user token or session cookie of the org. */
const readFleet: RouteAuthorization<Deps> = { action: 'read', resource: (_req, p) => ({ type: 'DaemonHost', id: '*', orgId: p.orgId }) };

export function fleetRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get',
      path: '/api/fleet/stats',
      auth: 'org',
      summary: "The org's live worker fleet and session queue: live and paused workers, capacity, sessions per status, queue depth, paused project queues, quota use",
      tags: ['fleet'],
      responseSchema: fleetStatsReply,
      authorize: readFleet,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const daemons = daemonServices(deps);
        // Liveness is buffered in memory for up to a second; flushing first makes "live" mean "seen", not "written".
        await daemons.liveness.flush();
        return { body: await fleetStats(deps.db, p.orgId, deps.clock.now(), daemons.leaseMs) };
      },
    }),
    route({
      method: 'get',
      path: '/api/fleet/workers',
      auth: 'org',
      summary: `The org's workers, latest heartbeat first (at most ${MAX_WORKERS_LISTED}): capacity, sessions held, projects, last heartbeat, live, paused`,
      tags: ['fleet'],
      responseSchema: workerListReply,
      authorize: readFleet,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const daemons = daemonServices(deps);
        await daemons.liveness.flush();
        return { body: { workers: await listWorkers(deps.db, p.orgId, deps.clock.now(), daemons.leaseMs) } };
      },
    }),
  ];
}
