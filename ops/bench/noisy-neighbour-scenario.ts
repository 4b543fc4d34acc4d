import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { postJson } from './daemon-fleet.js';

/**
 * Issue 30's noisy neighbour: while org A runs one attack at full speed, org B heartbeats and dispatches as a busy
 * team would, and B's latency and the node's resident memory are read. Shared by `ops/bench/noisy-neighbour.ts`
 * (which prints the figures against the goal: B's p99 within 2× of its quiet value) and the hostile test (which holds
 * looser bounds a loaded CI machine can keep). The node runs in its own process; the attacker and B's probe run here.
 *
 * The attacks, each the probe's description of a finding:
 * - `filters`: 60 published workflows with the costliest webhook filter allowed, and signed 560 KB deliveries;
 * - `interviews`: 1 MB of interview tokens per post into a new made-up interview each time, one SSE stream open;
 * - `schedules`: the most schedules an org may publish, each firing as often as allowed, overlaps allowed;
 * - `logins`: wrong passwords for B's owner from many source addresses.
 */
export type Attack = 'filters' | 'interviews' | 'schedules' | 'logins';
export const ATTACKS: readonly Attack[] = ['filters', 'interviews', 'schedules', 'logins'];

export interface Org {
  readonly orgId: string;
  readonly projectId: string;
  readonly ownerToken: string;
  readonly ownerEmail: string;
  readonly apiKeys: string[];
  readonly worker: { workerId: string; runtimeJwt: string };
}

export interface PhaseFigures {
  readonly phase: string;
  readonly heartbeatP50: number;
  readonly heartbeatP99: number;
  readonly dispatchP50: number;
  readonly dispatchP99: number;
  /** B's requests answered anything but success. */
  readonly bErrors: number;
  readonly maxRssMb: number;
  /** The attacker's requests: accepted, refused with 4xx (its limits), failed otherwise. */
  readonly attacker: { accepted: number; refused: number; failed: number };
}

const quantile = (xs: number[], q: number): number => {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
};

export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function request(base: string, method: string, path: string, token: string | undefined, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, {
    method, signal: AbortSignal.timeout(30_000),
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  await res.arrayBuffer();
  return res.status;
}

export async function provisionOrg(base: string, adminToken: string, name: string, keys: number): Promise<Org> {
  const ownerEmail = `owner-${randomUUID().slice(0, 8)}@${name.toLowerCase()}.test`;
  const created = await postJson(`${base}/api/admin/orgs`, { token: adminToken, body: { name, owner: { email: ownerEmail, password: 'the right password' } } });
  const apiKeys = [created.apiKey.fullKey as string];
  for (let i = 1; i < keys; i++) {
    apiKeys.push((await postJson(`${base}/api/org/${created.org.id}/keys`, { token: created.userToken, body: { name: `k${i}`, scopes: ['read', 'write'] } })).fullKey);
  }
  const worker = await postJson(`${base}/v1/daemon/register`, { body: { registrationToken: created.registrationToken, hostname: `${name}-host`, maxAgents: 4 } });
  return { orgId: created.org.id, projectId: created.project.id, ownerToken: created.userToken, ownerEmail, apiKeys, worker };
}

/** B's steady traffic: a heartbeat every 20 ms and a dispatch every 200 ms (over four keys, under their limits). */
async function probe(base: string, b: Org, until: () => boolean, into: { heartbeats: number[]; dispatches: number[]; errors: number }): Promise<void> {
  const timed = async (list: number[], call: () => Promise<number>, ok: (s: number) => boolean) => {
    const at = performance.now();
    const status = await call().catch(() => 0);
    list.push(performance.now() - at);
    if (!ok(status)) into.errors += 1;
  };
  let n = 0;
  const beats = (async () => {
    while (!until()) {
      await timed(into.heartbeats, () => request(base, 'POST', '/api/daemon/heartbeat', b.worker.runtimeJwt, { workerId: b.worker.workerId }), (s) => s === 200);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const dispatches = (async () => {
    while (!until()) {
      const key = b.apiKeys[n++ % b.apiKeys.length]!;
      await timed(into.dispatches, () => request(base, 'POST', '/api/agent-dispatch', key, { projectId: b.projectId, prompt: 'steady work' }), (s) => s === 201);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  await Promise.all([beats, dispatches]);
}

/** Readies org A for `attack` (workflows, secrets) and returns one attacking request, run in a loop by the caller. */
export async function prepareAttack(base: string, attack: Attack, a: Org, b: Org): Promise<() => Promise<number>> {
  switch (attack) {
    case 'filters': {
      const secret = 'noisy-neighbour-signing-secret';
      await request(base, 'PUT', `/api/org/${a.orgId}/integrations/github`, a.ownerToken, { signingSecret: secret });
      for (let i = 0; i < 60; i++) {
        const yaml = `schemaVersion: v2\nname: wide-${i}\ntrigger: {type: webhook, provider: github, event: issues, filter: {"a.*.*.x": ${i + 1000}, "a.*.*.y": ${i + 2000}}}\nnodes:\n  - {id: g, kind: approval, title: "g"}\nedges: []\n`;
        const created = await postJson(`${base}/api/projects/${a.projectId}/workflows`, { token: a.ownerToken, body: { name: `wide-${i}`, definitionYaml: yaml } });
        await request(base, 'PATCH', `/api/workflows/${created.id}`, a.ownerToken, { status: 'published' });
      }
      const payload = JSON.stringify({ action: 'opened', a: Array.from({ length: 200 }, () => Array.from({ length: 200 }, () => ({ x: 0, y: 0 }))) });
      return async () => {
        const body = payload.replace('"opened"', `"opened","n":"${randomUUID()}"`);
        const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
        return request(base, 'POST', `/api/webhooks/ingest/github?org=${a.orgId}`, undefined, body, {
          'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': signature,
        });
      };
    }
    case 'interviews': {
      const controller = new AbortController();
      void fetch(`${base}/api/interview/watched/stream`, { headers: { authorization: `Bearer ${a.ownerToken}`, accept: 'text/event-stream' }, signal: controller.signal })
        .then((res) => res.body?.pipeTo(new WritableStream())).catch(() => undefined);
      setTimeout(() => controller.abort(), 60_000).unref();
      const tokens = Array.from({ length: 2000 }, () => 'x'.repeat(500));
      const body = JSON.stringify({ tokens });
      return () => request(base, 'POST', `/api/interview/made-up-${randomUUID().slice(0, 8)}/deltas`, a.worker.runtimeJwt, body);
    }
    case 'schedules': {
      for (let i = 0; i < 60; i++) {
        const yaml = `schemaVersion: v2\nname: tick-${i}\ntrigger: {type: schedule, cron: "*/10 * * * * *", overlap: allow}\nnodes:\n  - {id: g, kind: approval, title: "g"}\nedges: []\n`;
        const created = await postJson(`${base}/api/projects/${a.projectId}/workflows`, { token: a.ownerToken, body: { name: `tick-${i}`, definitionYaml: yaml } });
        await request(base, 'PATCH', `/api/workflows/${created.id}`, a.ownerToken, { status: 'published' });
      }
      // The schedules run by themselves; the attacker also dispatches by hand as fast as its key may.
      return () => request(base, 'POST', '/api/agent-dispatch', a.apiKeys[0]!, { projectId: a.projectId, prompt: 'flood' });
    }
    case 'logins': {
      let n = 0;
      return () => request(base, 'POST', '/api/auth/login', undefined, { email: b.ownerEmail, password: `guess-${n}` }, { 'x-forwarded-for': `198.51.100.${(n++ % 50) + 1}` });
    }
  }
}

/** One phase: B's probe for `seconds`, with `attackOnce` run by `width` loops alongside when given. */
export async function runPhase(
  base: string, pid: number, b: Org, phase: string, seconds: number, attackOnce?: () => Promise<number>, width = 4,
): Promise<PhaseFigures> {
  const ends = Date.now() + seconds * 1000;
  const until = () => Date.now() >= ends;
  const into = { heartbeats: [] as number[], dispatches: [] as number[], errors: 0 };
  const attacker = { accepted: 0, refused: 0, failed: 0 };
  let maxRssMb = rssMb(pid);
  const sampler = setInterval(() => { maxRssMb = Math.max(maxRssMb, rssMb(pid)); }, 100);
  const attackers = attackOnce === undefined ? [] : Array.from({ length: width }, async () => {
    while (!until()) {
      const status = await attackOnce().catch(() => 0);
      if (status >= 200 && status < 300) attacker.accepted += 1;
      else if (status >= 400 && status < 500) attacker.refused += 1;
      else attacker.failed += 1;
    }
  });
  await Promise.all([probe(base, b, until, into), ...attackers]);
  clearInterval(sampler);
  return {
    phase, heartbeatP50: quantile(into.heartbeats, 0.5), heartbeatP99: quantile(into.heartbeats, 0.99),
    dispatchP50: quantile(into.dispatches, 0.5), dispatchP99: quantile(into.dispatches, 0.99), bErrors: into.errors,
    maxRssMb: Math.max(maxRssMb, rssMb(pid)), attacker,
  };
}
