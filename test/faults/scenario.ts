import http from 'node:http';
import type { NodeProcess } from '../cluster/processes.js';
import type { FaultWorld } from './world.js';
import { MixedLoad, type LoadRates } from './load.js';

/** The org, workers and load of one fault run, provisioned through the first node's HTTP interface. */
export interface Tenant {
  readonly orgId: string;
  readonly apiKey: string;
  /** The org owner's user token (connecting integrations, registering requesters). */
  readonly ownerToken: string;
  readonly projectId: string;
  readonly workers: Array<{ workerId: string; runtimeJwt: string }>;
}

async function post(url: string, path: string, token: string | undefined, body: unknown): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(15_000),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const json = await res.json().catch(() => undefined);
  if (!res.ok) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

export async function provisionTenant(world: FaultWorld, workers = 8): Promise<Tenant> {
  const url = world.nodes[0]!.url;
  const created = await post(url, '/api/admin/orgs', world.adminToken, { name: 'Faults', owner: { email: `faults-${Date.now()}@example.com` } });
  const tenant: Tenant = { orgId: created.org.id, apiKey: created.apiKey.fullKey, ownerToken: created.userToken, projectId: created.project.id, workers: [] };
  for (let i = 0; i < workers; i++) {
    const w = await post(url, '/v1/daemon/register', undefined, { registrationToken: created.registrationToken, hostname: `faults-${i}`, maxAgents: 50 });
    tenant.workers.push({ workerId: w.workerId, runtimeJwt: w.runtimeJwt });
  }
  return tenant;
}

export function loadOn(world: FaultWorld, tenant: Tenant, rates: LoadRates): MixedLoad {
  return new MixedLoad({ urls: world.nodes.map((n) => n.url), apiKey: tenant.apiKey, projectId: tenant.projectId, workers: tenant.workers }, rates);
}

/** GET /readyz of a node: its status code, or 0 when it did not answer within `ms`. */
export function readyz(node: NodeProcess, ms = 3_000): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(`${node.url}/readyz`, { timeout: ms }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

/** Milliseconds until `probe` holds (polled every 100 ms), or undefined after `withinMs`. */
export async function msUntil(probe: () => Promise<boolean> | boolean, withinMs: number): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < withinMs) {
    if (await probe()) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One dispatch through the node, timed: what a caller sees (status, code, Retry-After) and how long it waited. */
export async function timedDispatch(node: NodeProcess, tenant: Tenant): Promise<{ status: number; code: string | undefined; retryAfter: string | null; ms: number }> {
  const started = performance.now();
  try {
    const res = await fetch(`${node.url}/api/agent-dispatch`, {
      method: 'POST', signal: AbortSignal.timeout(15_000),
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ projectId: tenant.projectId, prompt: 'fault probe' }),
    });
    const body = await res.json().catch(() => undefined) as { code?: string } | undefined;
    return { status: res.status, code: body?.code, retryAfter: res.headers.get('retry-after'), ms: performance.now() - started };
  } catch {
    return { status: 0, code: undefined, retryAfter: null, ms: performance.now() - started };
  }
}

/** One request to a node with a bearer token: its status (0 when it was not answered within 15 s) and JSON body. */
export async function callNode(node: NodeProcess, method: string, route: string, token: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${node.url}${route}`, {
    method, signal: AbortSignal.timeout(15_000),
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  }).catch(() => undefined);
  return { status: res?.status ?? 0, json: await res?.json().catch(() => undefined) };
}
