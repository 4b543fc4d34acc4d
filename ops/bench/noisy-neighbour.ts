// Issue 30's noisy-neighbour goal: while org A runs each attack at full speed for 10 s, org B's heartbeat and dispatch
// p99 stay within 2× of their quiet value, and the node's resident memory grows by at most RSS_GROWTH_BOUND_MB over
// the quiet phase's (a fresh embedded node's own RSS depends on its first start's migrations, not on the attack).
//   taskset -c 1 npx tsx ops/bench/noisy-neighbour.ts [--seconds 10] [--width 4]
// One embedded node on core 0 (`npm start`'s node options), the attacker and B's probe here. Prints one row per phase
// and each goal's verdict; the phases run in one process, one after another, so the ratios compare like with like.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateMasterKey } from '../secrets.js';
import { printTable, startFlags, startServer } from './harness.js';
import { ATTACKS, prepareAttack, provisionOrg, runPhase, type PhaseFigures } from './noisy-neighbour-scenario.js';

const arg = (name: string, otherwise: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : otherwise;
};
const seconds = arg('seconds', 10);
const width = arg('width', 4);
/** The goal's memory bound: the stream-history bounds allow 40 MB, scrypt's line 32 MB, and V8's young generation 128 MB. */
const RSS_GROWTH_BOUND_MB = 200;

const here = path.dirname(new URL(import.meta.url).pathname);
const root = path.join(here, '../..');
const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-noisy-'));
const adminToken = `trpadm_bench_${Date.now()}_0123456789abcdef`;
const node = await startServer(path.join(root, 'ops/main.ts'), {
  TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_DATA_DIR: workDir, PORT: '0', HOST: '127.0.0.1', TROUPE_ADMIN_TOKEN: adminToken,
  TROUPE_LOG_LEVEL: 'info', TROUPE_TRUST_PROXY_HOPS: '1',
}, '0', startFlags(root));
try {
  const base = `http://127.0.0.1:${node.port}`;
  const pid = node.child.pid!;
  const b = await provisionOrg(base, adminToken, 'Quiet', 4);
  const rows: PhaseFigures[] = [await runPhase(base, pid, b, 'quiet', seconds)];
  for (const attack of ATTACKS) {
    const a = await provisionOrg(base, adminToken, `Noisy${attack}`, 1);
    const once = await prepareAttack(base, attack, a, b);
    process.stderr.write(`attack: ${attack} for ${seconds} s\n`);
    rows.push(await runPhase(base, pid, b, attack, seconds, once, width));
  }
  const quiet = rows[0]!;
  printTable(rows.map((r) => ({
    phase: r.phase, 'B hb p50 ms': r.heartbeatP50, 'B hb p99 ms': r.heartbeatP99, 'hb p99 ÷ quiet': r.heartbeatP99 / quiet.heartbeatP99,
    'B dispatch p50 ms': r.dispatchP50, 'B dispatch p99 ms': r.dispatchP99, 'dispatch p99 ÷ quiet': r.dispatchP99 / quiet.dispatchP99,
    'B errors': r.bErrors, 'max RSS MB': r.maxRssMb, 'A accepted/refused/failed': `${r.attacker.accepted}/${r.attacker.refused}/${r.attacker.failed}`,
  })));
  for (const r of rows.slice(1)) {
    const latency = r.heartbeatP99 <= 2 * quiet.heartbeatP99 && r.dispatchP99 <= 2 * quiet.dispatchP99;
    const growth = r.maxRssMb - quiet.maxRssMb;
    console.log(`${r.phase}: B's p99 within 2× of quiet: ${latency ? 'met' : 'NOT met'}; RSS growth ${growth.toFixed(0)} MB ≤ ${RSS_GROWTH_BOUND_MB} MB: ${growth <= RSS_GROWTH_BOUND_MB ? 'met' : 'NOT met'}; B errors: ${r.bErrors}`);
  }
} finally {
  await node.stop();
  rmSync(workDir, { recursive: true, force: true });
}
