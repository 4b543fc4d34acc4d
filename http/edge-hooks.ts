import type { Deps } from '../actors/services/deps.js';
import { limitRequest, limitWorkerOutput } from '../actors/services/identity/request-limits.js';
import type { EdgeHooks } from './pipeline.js';

/**
 * The node's edge hooks, from its deps: per-credential and per-source limits, and Cedar for routes that declare
 * `authorize`. The node's server and injected test requests (test/support/inject.ts) use the same ones. Each call
 * reads `deps.authz` afresh, so a test that watches the authorizer sees the edge's decisions too.
 */
export function edgeHooksFor(deps: Deps): EdgeHooks {
  const { services } = deps;
  return {
    limitRequest: (kind, principal) => limitRequest(services.rateLimits, kind === 'dispatch' ? 'dispatch' : 'write', principal),
    limitWorkerOutput: (workerId, bytes) => limitWorkerOutput(services.rateLimits, workerId, bytes),
    limitWorker: (kind, workerId) => services.rateLimits.worker[kind].consume(workerId, deps.clock.now()),
    assertSourceOpen: (address) => services.rateLimits.webhookFailures.assertOpen(address),
    authorize: (principal, action, resource) => deps.authz.authorize(principal, action, resource),
  };
}
