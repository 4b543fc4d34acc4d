// Benchmark (issue 2): authenticated GET /api/cli/whoami on a real node (embedded defaults) against a bare uWS JSON
// handler, interleaved for several rounds in one run (PERFORMANCE.md "Method": server on core 0, wrk on core 1);
// prints req/s, p50, p99 and the median of the per-round ratios.
// Run: taskset -c 1 npx tsx ops/bench/http.ts [--rounds 5] [--duration 10] [--warmup 3] [--users 50]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, printTable, requireWrk, runWrk, startServer, writeRequestFile, type WrkResult } from './harness.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    users: { type: 'string', default: '50' },
  },
});
const rounds = Number(values.rounds);
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const users = Number(values.users);
requireWrk();

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-'));
const adminToken = `trpadm_bench_${Date.now()}_0123456789abcdef`;
const here = path.dirname(new URL(import.meta.url).pathname);

const ceiling = await startServer(path.join(here, 'ceilings/uws-get-json.ts'));
const node = await startServer(path.join(here, '../main.ts'), {
  TROUPE_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', TROUPE_ADMIN_TOKEN: adminToken, TROUPE_LOG_LEVEL: 'info',
}).catch(async (err) => { await ceiling.stop(); throw err; });

try {
  const base = `http://127.0.0.1:${node.port}`;
  const created = await fetch(`${base}/api/admin/orgs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bench', owner: { email: 'bench@bench.test' } }),
  });
  if (created.status !== 201) throw new Error(`provisioning failed: ${created.status} ${await created.text()}`);
  const { org } = (await created.json()) as { org: { id: string } };
  // Many users, so the run measures the memoised path across callers rather than one hot cache line.
  const tokens: string[] = [];
  for (let i = 0; i < users; i++) {
    const made = await fetch(`${base}/api/admin/orgs/${org.id}/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: `user${i}@bench.test`, role: 'member' }),
    });
    if (made.status !== 201) throw new Error(`user ${i}: ${made.status} ${await made.text()}`);
    tokens.push(((await made.json()) as { userToken: string }).userToken);
  }
  const check = await fetch(`${base}/api/cli/whoami`, { headers: { authorization: `Bearer ${tokens[0]}` } });
  if (check.status !== 200) throw new Error(`whoami answered ${check.status}`);

  const realFile = writeRequestFile(path.join(dataDir, 'whoami.tsv'), tokens.map((token) => ({ path: '/api/cli/whoami', token, body: '' })));
  const bareFile = writeRequestFile(path.join(dataDir, 'bare.tsv'), [{ path: '/api/cli/whoami', token: 'x', body: '' }]);
  const targets = {
    'uws bare GET (ceiling)': { url: `http://127.0.0.1:${ceiling.port}`, requestFile: bareFile },
    'troupe GET /api/cli/whoami (user tokens)': { url: base, requestFile: realFile },
  };
  const results: Record<string, WrkResult[]> = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
  const ratios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const [name, target] of Object.entries(targets)) {
      await runWrk({ ...target, seconds: warmup, connections: 100 });
      const result = await runWrk({ ...target, seconds: duration, connections: 100, offset: round * 7 });
      results[name]!.push(result);
      process.stderr.write(`round ${round}/${rounds} ${name}: ${Math.round(result.rps)} req/s p99 ${result.p99Ms.toFixed(2)} ms\n`);
    }
    const [bare, real] = Object.keys(targets).map((k) => results[k]!.at(-1)!);
    ratios.push(real!.rps / bare!.rps);
  }
  printTable(Object.entries(results).map(([name, rs]) => ({
    config: name,
    'req/s (median)': Math.round(median(rs.map((r) => r.rps))),
    'p50 ms': median(rs.map((r) => r.p50Ms)),
    'p99 ms': median(rs.map((r) => r.p99Ms)),
    'non-2xx': rs.reduce((n, r) => n + r.non2xx, 0),
    errors: rs.reduce((n, r) => n + r.errors, 0),
  })));
  console.log(`\nwhoami / bare ratio (median of ${rounds} per-round ratios): ${median(ratios).toFixed(3)}; per round: ${ratios.map((r) => r.toFixed(3)).join(' ')}`);
} finally {
  await Promise.all([ceiling.stop(), node.stop()]);
  rmSync(dataDir, { recursive: true, force: true });
}
