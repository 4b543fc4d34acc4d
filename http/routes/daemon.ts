import { warnOncePerWindow } from '../../ops/kernel/flood-log.js';
import { randomUUID } from 'node:crypto';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/deps.js';
import type { Principal } from '../../actors/identity/principal.js';
import { signToken } from '../../actors/identity/tokens.js';
import { hashesEqual, parseSecret, registrationTokenPrefix } from '../../actors/identity/secrets-format.js';
import { daemonHostAddress, type DaemonHostReply } from '../../actors/daemon-host/index.js';
import { daemonServices, type DaemonServices } from '../../actors/daemon-host/services.js';
import { publicIdPattern } from '../../actors/session/index.js';
import { registrationTokensByPrefix } from '../../storage/identity/credentials.js';
import { listProjects, projectsInOrg } from '../../storage/identity/orgs.js';
import { findMutation, mutationHistory, workerInOrg } from '../../storage/sessions/daemon.js';
import { pollForWorker } from '../../storage/sessions/offers.js';
import { enqueueMutationBody, heartbeatBody, mutationViewSchema, offeredSessionSchema, pollBody, registerBody } from '../../schemas/sessions/daemon.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import type { HttpRequest, Reply, Route } from '../types.js';
import { JSON_TYPE } from '../pipeline.js';
import { route } from '../route.js';

/**
 * The daemon protocol (spec 4.2, decision 0007): registration by registration token, heartbeats that deliver
 * mutations, polls that offer pending sessions, step heartbeats, and the operator's mutation queue.
 *
 * The heartbeat is the hot path. Its token is verified once and memoised by the authenticator (expiry, signature
 * and revocation still enforced); liveness goes to an in-memory coalescing writer; the daemon-host actor is asked
 * only when the node's pending index says the worker may have undelivered mutations, so a quiet heartbeat sends
 * no actor message and touches no database.
 */

export const HEARTBEAT_INTERVAL_SECONDS = 15;
export const POLL_INTERVAL_SECONDS = 5;
/** CONTRACT: the runtime JWT is refreshed in the heartbeat reply when under five minutes are left. */
export const REFRESH_WHEN_UNDER_MS = 5 * 60 * 1000;
const DAEMON_SCOPES = ['daemon'];

type RuntimePrincipal = Extract<Principal, { kind: 'runtime' }>;

function runtimePrincipal(req: HttpRequest, workerId: string): RuntimePrincipal {
  const p = orgPrincipal(req);
  if (p.kind !== 'runtime') throw new TroupeError('AUTH_FORBIDDEN', 'this operation takes a worker runtime token');
  // The body's workerId is checked against the token, never trusted.
  if (p.workerId !== workerId) throw new TroupeError('AUTH_FORBIDDEN', 'workerId does not match the runtime token');
  return p;
}

/**
 * Expiry of the bearer token the request was authenticated with. The authenticator has already verified it, so
 * reading `exp` from its payload is safe; the result is kept per worker so a heartbeat decodes its token once.
 */
const expiryByWorker = new Map<string, { authorization: string | undefined; exp: number }>();
function tokenExpiry(workerId: string, authorization: string | undefined): number {
  // Known by the header as sent (one comparison), not by the token cut out of it (two new strings per heartbeat).
  const known = expiryByWorker.get(workerId);
  if (known && known.authorization === authorization) return known.exp;
  const token = authorization?.slice(authorization.indexOf(' ') + 1).trim() ?? '';
  let exp = 0;
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown };
    if (typeof payload.exp === 'number') exp = payload.exp * 1000;
  } catch {
    exp = 0;
  }
  if (expiryByWorker.size > 200_000) expiryByWorker.clear();
  expiryByWorker.set(workerId, { authorization, exp });
  return exp;
}

async function issueRuntimeToken(deps: Deps, svc: DaemonServices, claims: { wid: string; org: string; prj: readonly string[]; reg: string }) {
  return signToken(svc.keys, deps.clock, 'runtime', { ...claims, scope: DAEMON_SCOPES });
}

/** Asks the daemon-host actor for undelivered mutations; a failure delivers nothing now and retries next heartbeat. */
async function deliverPending(deps: Deps, svc: DaemonServices, workerId: string): Promise<Extract<DaemonHostReply, { kind: 'delivered' }> | undefined> {
  if (!svc.pending.mayHavePending(workerId)) return undefined;
  try {
    const reply = await deps.ask<DaemonHostReply>(daemonHostAddress(workerId), { type: 'daemonHost.deliver' });
    if (reply.kind !== 'delivered') return undefined;
    svc.notePending(workerId, reply.pendingCount);
    return reply;
  } catch (err) {
    if (err instanceof TroupeError && err.code === 'NOT_FOUND') throw new TroupeError('AUTH_INVALID', 'this worker is not registered');
    warnOncePerWindow(deps.log, 'mutation-delivery', { err, workerId }, 'mutation delivery failed; the next heartbeat retries');
    return undefined;
  }
}

/** A heartbeat that delivers mutations or refreshes the runtime token (or both). */
async function heartbeatWithWork(deps: Deps, svc: DaemonServices, p: RuntimePrincipal, authorization: string | undefined, now: number) {
  const delivered = await deliverPending(deps, svc, p.workerId);
  const projectsChanged = delivered?.projectsChanged ?? false;
  if (!projectsChanged && tokenExpiry(p.workerId, authorization) - now >= REFRESH_WHEN_UNDER_MS) {
    return { body: { ok: true, mutations: delivered?.mutations ?? [] } };
  }
  const { token } = await issueRuntimeToken(deps, svc, {
    wid: p.workerId, org: p.orgId, prj: delivered?.projectIds ?? p.projectIds, reg: p.registrationId,
  });
  return { body: { ok: true, mutations: delivered?.mutations ?? [], runtimeJwt: token } };
}

/** What nearly every heartbeat is answered, serialised once. */
const QUIET_HEARTBEAT_REPLY: Reply = Object.freeze({ kind: 'text', contentType: JSON_TYPE, body: JSON.stringify({ ok: true, mutations: [] }) });

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Spec 9.6: only registration lives under /v1, every other operation under /api. Workers started before the move
 * still call `/v1/daemon/…`, so the very same route (handler, schemas, admission, header list) is registered a second
 * time there, marked deprecated: no redirect, no extra hop, so the alias is exactly as fast as the new path.
 */
function withDeprecatedV1Alias(served: Route<Deps>): Route<Deps>[] {
  const legacyPath = served.path.replace(/^\/api\//, '/v1/');
  return [served, { ...served, path: legacyPath, deprecated: true, summary: `Deprecated alias of ${served.path}. ${served.summary}` }];
}

export function daemonRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post',
      path: '/v1/daemon/register',
      auth: 'none',
      summary: 'Register a worker daemon with a registration token (in the body) and receive its runtime JWT',
      tags: ['daemon'],
      bodySchema: registerBody,
      responseSchema: {
        type: 'object', required: ['workerId', 'runtimeJwt', 'heartbeatIntervalSeconds', 'pollIntervalSeconds'],
        properties: {
          workerId: { type: 'string' }, runtimeJwt: { type: 'string' },
          heartbeatIntervalSeconds: { type: 'integer' }, pollIntervalSeconds: { type: 'integer' },
        },
      },
      async handler(req, deps) {
        const body = req.body;
        const parsed = parseSecret(registrationTokenPrefix, body.registrationToken);
        if (!parsed) throw new TroupeError('AUTH_INVALID', 'registration token is invalid or revoked');
        const candidates = await registrationTokensByPrefix(deps.db, parsed.lookupPrefix);
        let found: (typeof candidates)[number] | undefined;
        for (const c of candidates) if (hashesEqual(c.hash, parsed.hash)) found = c;
        if (!found || found.revokedAt !== null) throw new TroupeError('AUTH_INVALID', 'registration token is invalid or revoked');
        // A token naming no projects serves every project of its org as of registration.
        const projectIds = found.projects.length > 0
          ? [...await projectsInOrg(deps.db, found.orgId, found.projects)]
          : (await listProjects(deps.db, found.orgId)).map((p) => p.id);
        const workerId = randomUUID();
        const reply = await deps.ask<DaemonHostReply>(daemonHostAddress(workerId), {
          type: 'daemonHost.register', orgId: found.orgId, registrationId: found.id, hostname: body.hostname,
          maxAgents: body.maxAgents, projectIds,
        });
        if (reply.kind !== 'registered') throw new TroupeError('INTERNAL', 'unexpected reply to register');
        const svc = daemonServices(deps);
        const { token } = await issueRuntimeToken(deps, svc, { wid: workerId, org: found.orgId, prj: reply.projectIds, reg: found.id });
        // A worker heartbeats at least three times per lease, so a short lease (tests, fast failover) never reclaims
        // the sessions of a worker that is alive.
        const heartbeatIntervalSeconds = Math.min(HEARTBEAT_INTERVAL_SECONDS, Math.max(1, Math.floor(svc.leaseMs / 3000)));
        return {
          body: { workerId, runtimeJwt: token, heartbeatIntervalSeconds, pollIntervalSeconds: POLL_INTERVAL_SECONDS },
        };
      },
    }),
    ...withDeprecatedV1Alias(route({
      method: 'post',
      path: '/api/daemon/heartbeat',
      auth: 'runtime',
      admission: 'exempt',
      // Only the edge's headers (its token is among them): the heartbeat's hot path copies nothing else.
      readsHeaders: [],
      summary: 'Daemon liveness; delivers pending mutations (stamped deliveredAt before this answer) and refreshes the runtime JWT',
      tags: ['daemon'],
      bodySchema: heartbeatBody,
      responseSchema: {
        type: 'object', required: ['ok', 'mutations'],
        properties: { ok: { const: true }, mutations: { type: 'array', items: mutationViewSchema }, runtimeJwt: { type: 'string' } },
      },
      handler(req, deps) {
        const p = runtimePrincipal(req, req.body.workerId);
        const svc = daemonServices(deps);
        const now = deps.clock.now();
        svc.liveness.record(p.workerId, now);
        // A quiet heartbeat (nearly all: no mutation may wait, the token has time left) is answered at once, with
        // no promise: the edge then sends the reply within uWS's own callback.
        if (!svc.pending.mayHavePending(p.workerId) && tokenExpiry(p.workerId, req.headers.authorization) - now >= REFRESH_WHEN_UNDER_MS) {
          return QUIET_HEARTBEAT_REPLY;
        }
        return heartbeatWithWork(deps, svc, p, req.headers.authorization, now);
      },
    })),
    ...withDeprecatedV1Alias(route({
      method: 'post',
      path: '/api/daemon/poll',
      auth: 'runtime',
      summary: "Pending sessions of the worker's projects (and prompts queued for sessions it holds)",
      description: 'Each offer names the repository and ref the session runs on, the agent preset asked for, and its `run` '
        + '(1, or 2 and on for a follow-up: a prompt to a finished session). A follow-up carries `followUp {agentSessionId?, '
        + 'branch}` and is offered only to the worker that ran it while that worker is live (seen within the session lease), '
        + 'for at most TROUPE_FOLLOW_UP_GRACE_MS; then to any worker of the project, which rebuilds the workspace from the '
        + 'pushed branch.',
      tags: ['daemon'],
      bodySchema: pollBody,
      responseSchema: { type: 'object', required: ['sessions'], properties: { sessions: { type: 'array', items: offeredSessionSchema } } },
      async handler(req, deps) {
        const body = req.body;
        const p = runtimePrincipal(req, body.workerId);
        const now = deps.clock.now();
        const svc = daemonServices(deps);
        svc.liveness.record(p.workerId, now);
        // A follow-up waits for the worker that ran it while it is live, up to the grace (decision 0075).
        const routing = { liveSince: now - svc.leaseMs, graceSince: now - deps.config.followUpGraceMs };
        return { body: { sessions: await pollForWorker(deps.db, p.orgId, p.projectIds, p.workerId, body.capacity, now, routing) } };
      },
    })),
    route({
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
    }),
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
