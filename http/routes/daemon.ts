import { warnOncePerWindow } from '../../ops/kernel/flood-log.js';
import { randomUUID } from 'node:crypto';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { signToken } from '../../actors/services/identity/tokens.js';
import { hashesEqual, parseSecret, registrationTokenPrefix } from '../../actors/services/identity/secrets-format.js';
import { daemonHostAddress, type DaemonHostReply } from '../../actors/kinds/daemon-host/index.js';
import { daemonServices, type DaemonServices } from '../../actors/services/daemon/services.js';
import { registrationTokensByPrefix } from '../../storage/identity/credentials.js';
import { listProjects, projectsInOrg } from '../../storage/identity/orgs.js';
import { pollForWorker } from '../../storage/sessions/offers.js';
import { heartbeatBody, mutationViewSchema, offeredSessionSchema, pollBody, registerBody } from '../../schemas/sessions/daemon.js';
import type { Reply, Route } from '../types.js';
import { JSON_TYPE } from '../pipeline.js';
import { route } from '../route.js';
import { runtimeWorker, type RuntimePrincipal } from './runtime-caller.js';
import { stepHeartbeatRoute } from './step-heartbeat.js';
import { mutationRoutes } from './daemon-mutations.js';

/**
 * The daemon protocol (spec 4.2, decision 0007): registration by registration token, heartbeats that deliver
 * mutations, polls that offer pending sessions, step heartbeats (step-heartbeat.ts), and the operator's mutation
 * queue (daemon-mutations.ts).
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
  return [registrationRoute(), ...heartbeatRoutes(), stepHeartbeatRoute(), ...mutationRoutes()];
}

function registrationRoute(): Route<Deps> {
  return route({
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
  });
}

/** The heartbeat and the poll, each also under its deprecated /v1 path. */
function heartbeatRoutes(): Route<Deps>[] {
  return [
    ...withDeprecatedV1Alias(route({
      method: 'post',
      path: '/api/daemon/heartbeat',
      auth: 'runtime',
      admission: 'exempt',
      rateLimit: 'workerHeartbeat',
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
        const p = runtimeWorker(req, req.body.workerId);
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
      rateLimit: 'workerPoll',
      summary: "Pending sessions of the worker's projects (and prompts queued for sessions it holds)",
      description: 'Each offer names the repository and ref the session runs on, the agent preset asked for, and its `run` '
        + '(1, or 2 and on for a follow-up: a prompt to a finished session). A follow-up carries `followUp {agentSessionId?, '
        + 'branch}` and is offered only to the worker that ran it while that worker is live (seen within the session lease), '
        + 'for at most TROUPE_FOLLOW_UP_GRACE_MS; then to any worker of the project, which rebuilds the workspace from the '
        + 'pushed branch. Nothing of a paused project\'s queue; nothing at all to a paused worker (the prompts queued for '
        + 'the sessions it holds still come; decision 0079).',
      tags: ['daemon'],
      bodySchema: pollBody,
      responseSchema: { type: 'object', required: ['sessions'], properties: { sessions: { type: 'array', items: offeredSessionSchema } } },
      async handler(req, deps) {
        const body = req.body;
        const p = runtimeWorker(req, body.workerId);
        const now = deps.clock.now();
        const svc = daemonServices(deps);
        svc.liveness.record(p.workerId, now);
        // A follow-up waits for the worker that ran it while it is live, up to the grace (decision 0075).
        const routing = { liveSince: now - svc.leaseMs, graceSince: now - deps.config.followUpGraceMs };
        return { body: { sessions: await pollForWorker(deps.db, p.orgId, p.projectIds, p.workerId, body.capacity, now, routing) } };
      },
    })),
  ];
}
