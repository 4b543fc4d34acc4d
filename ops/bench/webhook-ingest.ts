// What an unauthenticated webhook delivery costs the node (issue 16, item 2; decision 0025), as ratios measured in
// one run on one in-process node on embedded defaults:
//   1. a 1 MiB delivery with a bad signature, with 155 orgs connected to the provider against 1 org: the delivery is
//      routed to the org its URL names before any signature work, so the ratio stays near 1 (it was ~19: 90 ms against
//      4.8 ms, one HMAC per connected org);
//   2. an authenticated request's median while three anonymous clients send such deliveries as fast as they can
//      (timed once each has spent its 30 refusals a minute), against its median alone: refused deliveries are counted
//      per source, and a source over its limit is answered 429 before its body is read.
//   npx tsx ops/bench/webhook-ingest.ts [--deliveries 40] [--requests 200]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { silentLogger } from '../kernel/logger.js';
import { generateAdminToken, generateMasterKey } from '../secrets.js';
import { startNode } from '../node.js';
import { signatureHeaderFor } from '../../actors/services/integrations/webhooks/providers.js';
import { median, printTable } from './harness.js';

const { values } = parseArgs({ options: { deliveries: { type: 'string', default: '40' }, requests: { type: 'string', default: '200' } } });
const deliveries = Number(values.deliveries);
const requests = Number(values.requests);
const ORGS = 155;

const dataDir = mkdtempSync(join(tmpdir(), 'troupe-bench-webhooks-'));
const adminToken = generateAdminToken();
// One proxy hop trusted, so each timed delivery can come from an address of its own and the failure limit (which
// would answer 429 unverified after 30) does not hide the signature work in part 1.
const config = loadConfig({}, {
  port: 0, host: '127.0.0.1', dataDir, masterKey: generateMasterKey(), adminToken, logLevel: 'silent', trustProxyHops: 1,
  rateLimitWritesPerMinute: 1_000_000,
});
const node = await startNode(config, { log: silentLogger() });

async function call(method: string, path: string, init: { token?: string; body?: string | Buffer; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  const res = await fetch(`${node.url}${path}`, { method, headers, body: init.body });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function connectedOrg(i: number) {
  const org = await call('POST', '/api/admin/orgs', { token: adminToken, body: JSON.stringify({ name: `bench-${i}`, owner: { email: `o${i}@bench.test` } }) });
  const put = await call('PUT', `/api/org/${org.json.org.id}/integrations/github`, { token: org.json.userToken, body: JSON.stringify({ signingSecret: randomBytes(20).toString('hex') }) });
  if (put.status !== 200) throw new Error(`could not connect org ${i}: ${put.status}`);
  return { orgId: org.json.org.id as string, token: org.json.userToken as string };
}

const body = Buffer.from(JSON.stringify({ action: 'opened', pad: 'x'.repeat(1024 * 1024 - 64) }));
const forged = { ...signatureHeaderFor('github', 'not-the-secret', body), 'x-github-event': 'issues' };
let source = 0;
async function badDeliveryMs(orgId: string): Promise<number> {
  const started = performance.now();
  const res = await call('POST', `/api/webhooks/ingest/github?org=${orgId}`, {
    body, headers: { ...forged, 'x-github-delivery': randomBytes(8).toString('hex'), 'x-forwarded-for': `198.18.${(source >> 8) & 255}.${source++ & 255}` },
  });
  if (res.status !== 401) throw new Error(`a forged delivery answered ${res.status}`);
  return performance.now() - started;
}
const timed = async (n: number, once: () => Promise<number>) => {
  const out: number[] = [];
  for (let i = 0; i < n; i += 1) out.push(await once());
  return out;
};

try {
  const first = await connectedOrg(0);
  await timed(5, () => badDeliveryMs(first.orgId));
  const oneOrg = median(await timed(deliveries, () => badDeliveryMs(first.orgId)));
  for (let i = 1; i < ORGS; i += 1) await connectedOrg(i);
  const manyOrgs = median(await timed(deliveries, () => badDeliveryMs(first.orgId)));

  const whoamiMs = async () => {
    const started = performance.now();
    const res = await call('GET', '/api/cli/whoami', { token: first.token });
    if (res.status !== 200) throw new Error(`whoami answered ${res.status}`);
    return performance.now() - started;
  };
  const alone = median(await timed(requests, whoamiMs));
  // The flooders run in processes of their own, so their sending costs this process (the node) nothing.
  const flood = `
    const [url, source] = process.argv.slice(1);
    const body = Buffer.alloc(1024 * 1024, 120);
    let refused = 0;
    process.on('SIGTERM', () => { process.stdout.write(String(refused)); process.exit(0); });
    (async () => {
      for (;;) {
        try {
          const res = await fetch(url, { method: 'POST', body, headers: {
            'content-type': 'application/json', 'x-hub-signature-256': 'sha256=' + '0'.repeat(64), 'x-github-event': 'issues',
            'x-github-delivery': String(Math.random()), 'x-forwarded-for': source } });
          await res.arrayBuffer();
          if (res.status === 429) refused += 1;
        } catch { refused += 1; }
      }
    })();`;
  const flooders = [1, 2, 3].map((f) => spawn(process.execPath, ['-e', flood, `${node.url}/api/webhooks/ingest/github?org=${first.orgId}`, `203.0.113.${f}`], { stdio: ['ignore', 'pipe', 'inherit'] }));
  // Each source is allowed its budget of refusals (30 a minute) at full cost; time the steady state after it.
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  const underFlood = median(await timed(requests, whoamiMs));
  const refused429 = (await Promise.all(flooders.map((child) => new Promise<number>((resolve) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('exit', () => resolve(Number(out) || 0));
    child.kill('SIGTERM');
  })))).reduce((x, y) => x + y, 0);

  printTable([
    { measure: `bad 1 MiB delivery, 1 org connected (ms, median of ${deliveries})`, value: oneOrg.toFixed(2) },
    { measure: `bad 1 MiB delivery, ${ORGS} orgs connected (ms)`, value: manyOrgs.toFixed(2) },
    { measure: `ratio ${ORGS} orgs / 1 org`, value: (manyOrgs / oneOrg).toFixed(2) },
    { measure: `whoami alone (ms, median of ${requests})`, value: alone.toFixed(2) },
    { measure: 'whoami while 3 anonymous clients flood (ms)', value: underFlood.toFixed(2) },
    { measure: 'ratio under flood / alone', value: (underFlood / alone).toFixed(2) },
    { measure: 'flood deliveries refused unread (429 or closed)', value: refused429 },
  ]);
} finally {
  await node.close();
  rmSync(dataDir, { recursive: true, force: true });
}
