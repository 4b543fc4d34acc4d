import type { Deps } from '../../actors/services/deps.js';
import type { ReadinessProbes } from './health.js';

/** The node's real readiness: started and not shutting down, a round trip to the database, the transport's connection state, a cache ping. */
export function readinessProbesFor(deps: Deps): ReadinessProbes {
  return {
    accepting: async () => deps.services.drain.serving,
    storage: async () => {
      await deps.db.raw('select 1');
      return true;
    },
    transport: async () => deps.transport.ready(),
    cache: async () => deps.cache.ping(),
  };
}
