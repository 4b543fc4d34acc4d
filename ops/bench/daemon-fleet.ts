/**
 * A node's daemons for the heartbeat benchmarks (heartbeat.ts, frameworks.ts): registered through the node's own
 * API, each heartbeating once so the node has seen every token before anything is measured (as in steady state).
 */

/** The options of a bench that drives daemons' heartbeats with wrk (heartbeat.ts, frameworks.ts), for parseArgs. */
export const heartbeatLoadOptions = {
  engine: { type: 'string', default: 'embedded' },
  daemons: { type: 'string', default: '10000' },
  rounds: { type: 'string', default: '5' },
  duration: { type: 'string', default: '10' },
  warmup: { type: 'string', default: '3' },
  connections: { type: 'string', default: '100' },
} as const;

/** `heartbeatLoadOptions` as parsed by parseArgs, checked: counts are positive integers, the engine one we know. */
export function readHeartbeatLoad(values: { readonly [K in keyof typeof heartbeatLoadOptions]: string }) {
  const positive = (name: keyof typeof heartbeatLoadOptions): number => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
    return n;
  };
  if (values.engine !== 'embedded' && values.engine !== 'postgres') throw new Error('--engine must be embedded or postgres');
  return {
    engine: values.engine, daemonCount: positive('daemons'), rounds: positive('rounds'), duration: positive('duration'),
    warmup: positive('warmup'), connections: positive('connections'),
  } as const;
}

export interface Daemon { readonly workerId: string; readonly runtimeJwt: string }

/** An org made by the admin API: its registration token, API key, user token and project, as the API answered. */
export type BenchOrg = any;

/** POSTs JSON with an optional bearer token; anything but 2xx throws with the node's answer. */
export async function postJson(url: string, init: { token?: string; body?: unknown }): Promise<any> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`POST ${url} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Runs `work(0..count-1)` with at most `width` in flight, results in index order. */
export async function inBatches<T>(count: number, width: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) { const i = next++; out[i] = await work(i); }
  }));
  return out;
}

/** Makes an org on the node at `base` (admin API). */
export function createBenchOrg(base: string, adminToken: string): Promise<BenchOrg> {
  return postJson(`${base}/api/admin/orgs`, { token: adminToken, body: { name: 'Bench', owner: { email: 'bench@bench.test' } } });
}

/** Registers `count` daemons in `org`, then has each heartbeat once. */
export async function registerDaemons(base: string, org: BenchOrg, count: number): Promise<Daemon[]> {
  const daemons = await inBatches(count, 32, (i) => postJson(`${base}/v1/daemon/register`, {
    body: { registrationToken: org.registrationToken, hostname: `bench-${i}`, maxAgents: 4 },
  }) as Promise<Daemon>);
  await inBatches(count, 32, (i) => postJson(`${base}/api/daemon/heartbeat`, { token: daemons[i]!.runtimeJwt, body: { workerId: daemons[i]!.workerId } }));
  return daemons;
}

/** A realistic heartbeat body of about 200 bytes. */
export function heartbeatBody(d: Daemon, i: number): string {
  return JSON.stringify({
    workerId: d.workerId, activeSessionIds: [`${(i * 7919).toString(16).padStart(16, '0')}`], load: 0.25,
    version: '1.42.0', hostname: `bench-${i}.pool.internal`, uptimeSeconds: 86_400 + i,
  });
}
