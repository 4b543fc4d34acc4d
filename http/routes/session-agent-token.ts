import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { isHeld, isTerminal, publicIdPattern, type SessionStatus } from '../../actors/kinds/session/index.js';
import { signToken, verifyTokenSync, type SessionClaims } from '../../actors/services/identity/tokens.js';
import { findSession } from '../../storage/sessions/queries.js';
import { sessionRun, type SessionRun } from '../../storage/sessions/agent-line.js';
import type { HttpRequest, Route } from '../types.js';
import { route } from '../route.js';
import { runtimeWorker } from './runtime-caller.js';

/**
 * The session token (decision 0088): what a worker gives its agent so that `troupe mcp` acts for this one run of
 * this one session and nothing else. It is a JWT of its own `typ` (`session`), so no other route's authenticator
 * takes it, and it names the session's key, org, project and run. Every use reads the session: the token works only
 * while that run is live, so it dies with the run (a stop, an end, a follow-up's new run) whatever its expiry says.
 */

const BEARER = /^Bearer ([A-Za-z0-9_.-]{1,4096})$/i;

export interface AgentCaller {
  readonly claims: SessionClaims;
  readonly run: SessionRun;
  /** Whether the run the token was given for is still the session's live one. */
  readonly live: boolean;
}

/**
 * The caller of an agent-line route: a valid session token (else 401) whose session is the one `:id` names (a
 * token of another session, of this org or another: 404, as if absent). `requireLive` refuses an ended run with 401.
 */
export async function agentCaller(req: HttpRequest, deps: Deps, requireLive = true): Promise<AgentCaller> {
  const header = req.headers.authorization;
  if (header === undefined || header === '') throw new TroupeError('AUTH_MISSING', 'this route takes the session token (TROUPE_SESSION_TOKEN)');
  const token = BEARER.exec(header)?.[1];
  if (token === undefined) throw new TroupeError('AUTH_INVALID');
  const { claims } = verifyTokenSync(deps.services.keys, deps.clock, token, ['session'] as const);
  const id = req.params.id ?? '';
  const found = publicIdPattern.test(id) ? await findSession(deps.db, claims.org, id) : undefined;
  if (found === undefined || found.key !== claims.sid) throw new TroupeError('NOT_FOUND', 'session not found');
  const run = await sessionRun(deps.db, claims.org, found.key);
  if (run === undefined) throw new TroupeError('NOT_FOUND', 'session not found');
  // The same run, still held by the worker it was given to: a run reclaimed and claimed again keeps its epoch.
  const live = run.epoch === claims.ep && run.workerId === claims.wid && !isTerminal(run.status as SessionStatus) && run.status !== 'pending';
  if (requireLive && !live) throw new TroupeError('AUTH_INVALID', "the session token's run has ended");
  return { claims, run, live };
}

export function sessionTokenRoute(): Route<Deps> {
  return route({
    method: 'post',
    path: '/api/sessions/:id/agent-token',
    auth: 'runtime',
    tags: ['sessions', 'daemon', 'agent-line'],
    summary: "A token for the agent of a session the worker holds: it acts for this run of this session only (decision 0088)",
    description: 'The worker hands it to its agent as `TROUPE_SESSION_TOKEN`, with `TROUPE_URL`, for `troupe mcp`. It is '
      + 'refused by every route but those of the agent line (`/api/sessions/{id}/agent/...`) of this session, and by those '
      + 'once the run ends (stopped, completed, failed, reclaimed, or followed by another run). 404 for a session outside '
      + "the worker's org and projects; 409 when the worker does not hold it.",
    bodySchema: {
      type: 'object', additionalProperties: false, required: ['workerId'],
      properties: { workerId: { type: 'string', minLength: 1, maxLength: 64 } },
    },
    successStatus: 201,
    responseSchema: {
      type: 'object', required: ['token', 'expiresAt', 'run'],
      properties: { token: { type: 'string' }, expiresAt: { type: 'string', format: 'date-time' }, run: { type: 'integer' } },
    },
    async handler(req, deps) {
      const p = runtimeWorker(req, req.body.workerId);
      const id = req.params.id ?? '';
      const found = publicIdPattern.test(id) ? await findSession(deps.db, p.orgId, id) : undefined;
      if (found === undefined || !p.projectIds.includes(found.projectId)) throw new TroupeError('NOT_FOUND', 'session not found');
      const run = await sessionRun(deps.db, p.orgId, found.key);
      if (run === undefined) throw new TroupeError('NOT_FOUND', 'session not found');
      if (run.workerId !== p.workerId || !isHeld(run.status as SessionStatus)) {
        throw new TroupeError('CONFLICT', 'this worker does not hold the session (stopped, reclaimed or ended)');
      }
      const issued = await signToken(deps.services.keys, deps.clock, 'session', {
        sid: run.key, org: p.orgId, prj: run.projectId, ep: run.epoch, wid: p.workerId,
      });
      return { status: 201, body: { token: issued.token, expiresAt: new Date(issued.expiresAt).toISOString(), run: run.epoch } };
    },
  });
}
