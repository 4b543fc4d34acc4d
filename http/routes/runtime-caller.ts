import { TroupeError } from '../../ops/kernel/errors.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { orgPrincipal } from '../principal.js';
import type { HttpRequest } from '../types.js';

/** The worker protocol's callers (daemon.ts, worker-protocol.ts, agent-relay.ts): a worker by its runtime token. */

export type RuntimePrincipal = Extract<Principal, { kind: 'runtime' }>;

export function runtimeCaller(req: HttpRequest): RuntimePrincipal {
  const p = orgPrincipal(req);
  if (p.kind !== 'runtime') throw new TroupeError('AUTH_FORBIDDEN', 'this operation takes a worker runtime token');
  return p;
}

/** The calling worker, which must be the one the body names: the body's workerId is checked against the token, never trusted. */
export function runtimeWorker(req: HttpRequest, workerId: string): RuntimePrincipal {
  const p = runtimeCaller(req);
  if (p.workerId !== workerId) throw new TroupeError('AUTH_FORBIDDEN', 'workerId does not match the runtime token');
  return p;
}
