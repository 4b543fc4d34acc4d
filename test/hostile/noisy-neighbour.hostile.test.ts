// Invariant (issue 30, "noisy neighbour"): while org A runs each attack of the probe at full speed (deep webhook
// filters, interview floods, schedules, login guessing), org B's heartbeats and dispatches keep succeeding and keep a
// bounded pace, and the node's resident memory stays bounded. Before the limits one delivery froze the node for 74 s
// and one worker grew it to 3.3 GB. The bounds here are loose enough for a loaded CI machine; the 2× goal is measured by
// `ops/bench/noisy-neighbour.ts`, which prints the ratios.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { generateAdminToken, generateMasterKey } from '../../ops/secrets.js';
import { killNode, startNodeProcess, type NodeProcess } from '../cluster/processes.js';
import { ATTACKS, prepareAttack, provisionOrg, runPhase, type Org } from '../../ops/bench/noisy-neighbour-scenario.js';

const PHASE_SECONDS = 5;
// A dispatch's p99 over a 5 s phase on a shared CI machine reached 1,090 ms once (CI, schedules phase) with nothing
// wrong; the failures this guards against froze B for tens of seconds (74 s). The 2× goal is the bench's to measure.
const P99_BOUND_MS = 2500;
const RSS_BOUND_MB = 1024;

describe('hostile: a noisy neighbour at full speed', function () {
  this.timeout(240_000);
  let node: NodeProcess;
  let dataDir: string;
  let b: Org;
  const adminToken = generateAdminToken();

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-noisy-'));
    node = await startNodeProcess(`noisy-${process.pid}`, {
      TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, TROUPE_DATA_DIR: dataDir, TROUPE_TRUST_PROXY_HOPS: '1',
      TROUPE_LOG_LEVEL: 'info', DATABASE_URL: '', AMQP_URL: '', REDIS_URL: '',
      // B's probe heartbeats every 20 ms (3,000 a minute), five times a worker's limit (decision 0082): the test
      // measures B's pace under A's attacks, not that limit.
      TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE: '100000',
    }, 120_000);
    b = await provisionOrg(node.url, adminToken, 'Quiet', 4);
  });
  after(async () => {
    if (node) await killNode(node);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  for (const attack of ATTACKS) {
    it(`keeps org B served while org A attacks with ${attack}`, async () => {
      const a = await provisionOrg(node.url, adminToken, `Noisy${attack}`, 1);
      const once = await prepareAttack(node.url, attack, a, b);
      const figures = await runPhase(node.url, node.child.pid!, b, attack, PHASE_SECONDS, once);
      const said = JSON.stringify(figures);
      expect(figures.bErrors, said).to.equal(0);
      expect(figures.heartbeatP99, said).to.be.below(P99_BOUND_MS);
      expect(figures.dispatchP99, said).to.be.below(P99_BOUND_MS);
      expect(figures.maxRssMb, said).to.be.below(RSS_BOUND_MB);
      expect(figures.attacker.failed, `the attacker met no 5xx: ${said}`).to.equal(0);
    });
  }
});
