import type { Registry } from 'prom-client';

/**
 * The registry's metric of this name, or the one `make` creates and registers. Metrics belong to the node's
 * registry, never to module state, so two nodes in one process keep theirs apart and one node finds its own again.
 */
export function registeredMetric<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}
