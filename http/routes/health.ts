import type { Registry } from 'prom-client';
import type { ErrorCode } from '../../ops/kernel/errors.js';
import type { Route } from '../types.js';

/** The dependencies /readyz checks; each maps to the error code a caller would see while it is down. */
export const readinessCodes = {
  /** False from the first moment of a shutdown: load balancers stop sending while the node still serves. */
  accepting: 'SHUTTING_DOWN',
  storage: 'STORAGE_UNAVAILABLE',
  transport: 'TRANSPORT_UNAVAILABLE',
  cache: 'CACHE_UNAVAILABLE',
} as const satisfies Record<string, ErrorCode>;

export type ReadinessProbes = Partial<Record<keyof typeof readinessCodes, () => Promise<boolean>>>;

/** A probe that does not answer in this time counts as down: readiness must answer fast for load balancers. */
const PROBE_TIMEOUT_MS = 2_000;

const okSchema = { type: 'object', required: ['ok'], properties: { ok: { const: true } } };

/**
 * Liveness, readiness and metrics, all without auth (CONTRACT "Health"). Probes are given directly or derived
 * from the deps at request time, so these routes do not depend on the full Deps shape.
 */
export function healthRoutes<D extends { readonly metrics: Registry }>(
  probes: ReadinessProbes | ((deps: D) => ReadinessProbes),
): Route<D>[] {
  return [
    {
      method: 'get',
      path: '/healthz',
      auth: 'none',
      summary: 'Process is up',
      tags: ['health'],
      responseSchema: okSchema,
      handler: async () => ({ body: { ok: true } }),
    },
    {
      method: 'get',
      path: '/readyz',
      auth: 'none',
      summary: 'Storage, transport and cache are reachable and the node is not shutting down (503 naming what is not)',
      tags: ['health'],
      responseSchema: {
        type: 'object',
        required: ['ok', 'checks'],
        properties: { ok: { type: 'boolean' }, checks: { type: 'object', additionalProperties: { type: 'boolean' } } },
      },
      handler: async (_req, deps) => {
        const checks = await runProbes(typeof probes === 'function' ? probes(deps) : probes);
        const failed = Object.entries(checks).filter(([, up]) => !up).map(([name]) => name as keyof typeof readinessCodes);
        if (failed.length === 0) return { body: { ok: true, checks } };
        return {
          status: 503,
          body: { ok: false, checks, error: `not ready: ${failed.join(', ')} unavailable`, code: readinessCodes[failed[0]!], details: { failed } },
        };
      },
    },
    {
      method: 'get',
      path: '/metrics',
      auth: 'none',
      summary: 'Prometheus metrics',
      tags: ['health'],
      responseContentType: 'text/plain',
      responseSchema: { type: 'string', description: 'The Prometheus text exposition format' },
      handler: async (_req, deps) => ({ kind: 'text', body: await deps.metrics.metrics(), contentType: deps.metrics.contentType }),
    },
  ];
}

/** Runs every probe at once, each bounded by the probe timeout; a probe that throws or is late reads as down. */
export async function runProbes(probes: ReadinessProbes): Promise<Record<string, boolean>> {
  const entries = Object.entries(probes).filter((e): e is [string, () => Promise<boolean>] => typeof e[1] === 'function');
  const results = await Promise.all(entries.map(async ([name, probe]) => [name, await probeWithin(probe, PROBE_TIMEOUT_MS)] as const));
  return Object.fromEntries(results);
}

async function probeWithin(probe: () => Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    // A probe that throws is a dependency that is down, not a failure of /readyz itself.
    return await Promise.race([probe().then((up) => up === true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
