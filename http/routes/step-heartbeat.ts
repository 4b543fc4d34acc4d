import type { Deps } from '../../actors/services/deps.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { daemonServices, type DaemonServices } from '../../actors/services/daemon/services.js';
import { publicIdPattern } from '../../actors/kinds/session/index.js';
import type { Route } from '../types.js';
import { route } from '../route.js';

/**
 * `POST /api/sessions/:id/step-heartbeat`: a worker's liveness per agent step, recorded into a batch. It answers
 * `ok` whatever happens, so a worker's agent is never held up by it.
 */
export function stepHeartbeatRoute(): Route<Deps> {
  return route({
    method: 'post',
    path: '/api/sessions/:id/step-heartbeat',
    // Authenticated inside: an authentication failure must be swallowed, which the edge would not do.
    auth: 'none',
    // Never 5xx, so never shed: like the heartbeat it only records into a batch, no database on its path.
    admission: 'exempt',
    readsHeaders: [],
    summary: "A worker's per-step liveness (lastToolCalledAt); never answers 5xx, swallows auth and storage failures",
    tags: ['sessions', 'daemon'],
    bodySchema: { type: 'object', required: ['workerId'], properties: { workerId: { type: 'string', maxLength: 64 } } },
    responseSchema: { type: 'object', required: ['ok'], properties: { ok: { const: true } } },
    async handler(req, deps) {
      let svc: DaemonServices | undefined;
      try {
        svc = daemonServices(deps);
        const sessionId = req.params.id ?? '';
        let principal: Principal | undefined;
        try {
          principal = await deps.auth.resolve({ authorization: req.headers.authorization, cookie: undefined });
        } catch {
          principal = undefined;
        }
        const workerId = req.body.workerId;
        if (principal?.kind !== 'runtime' || principal.workerId !== workerId) {
          svc.stepHeartbeatsSwallowed.inc({ reason: 'auth' });
        } else if (!publicIdPattern.test(sessionId)) {
          svc.stepHeartbeatsSwallowed.inc({ reason: 'unknown_session' });
        } else {
          // Written in the next batch, scoped to sessions this worker holds in its org.
          const now = deps.clock.now();
          svc.steps.record(`${principal.orgId}/${sessionId}`, { orgId: principal.orgId, sessionId, workerId, at: now });
          svc.liveness.record(workerId, now);
        }
      } catch (err) {
        svc?.stepHeartbeatsSwallowed.inc({ reason: 'internal' });
        deps.log.warn({ err }, 'step heartbeat swallowed a failure');
      }
      return { body: { ok: true } };
    },
  });
}
