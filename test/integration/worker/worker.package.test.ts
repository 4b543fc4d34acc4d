// Invariant (issue 31, part 2): `npm run pack:worker` makes a package that installs on its own into any prefix, with no
// dependency and none of the server's packages inside, small and fast to install; its `troupe-worker`, started
// directly (not under npx), registers, runs a session to completed, and on SIGTERM drains and exits 0.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { packWorker } from '../../../ops/cli/worker/pack.js';
import { startNodeProcess, stopAll, type NodeProcess } from '../../cluster/processes.js';
import { api, dispatch, provision, repoRoot, startWorker, stopWorkers, tempDir, untilStatus, type Api, type ProvisionedOrg } from './support.js';

const SERVER_ONLY = ['uWebSockets.js', '@electric-sql/pglite', 'knex', 'pg', 'amqplib', '@cedar-policy/cedar-wasm', 'ioredis'];

function sizeOf(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    bytes += entry.isDirectory() ? sizeOf(full) : statSync(full).size;
  }
  return bytes;
}

describe('the worker package (npm run pack:worker)', function () {
  this.timeout(120_000);
  const adminToken = generateAdminToken();
  let node: NodeProcess;
  let a: Api;
  let org: ProvisionedOrg;
  let prefix: string;
  let tarball: string;
  let installMs: number;

  before(async () => {
    const out = tempDir(`pack-${randomBytes(3).toString('hex')}`);
    tarball = await packWorker(out);
    prefix = tempDir('prefix');
    const started = Date.now();
    execFileSync('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--loglevel=error', tarball], { stdio: 'pipe' });
    installMs = Date.now() - started;
    node = await startNodeProcess(`worker-package-${process.pid}`, {
      TROUPE_DATA_DIR: tempDir('node'), TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken,
      TROUPE_LOG_LEVEL: 'info', DATABASE_URL: '', AMQP_URL: '', REDIS_URL: '',
    });
    a = api(node.url);
    org = await provision(a, adminToken);
  });
  after(async () => {
    await stopWorkers();
    await stopAll();
    if (prefix) rmSync(prefix, { recursive: true, force: true });
  });

  it('installs alone: no dependency, no server package, within 15 MB and 10 s', () => {
    const installed = path.join(prefix, 'node_modules');
    expect(readdirSync(installed).filter((n) => !n.startsWith('.'))).to.deep.equal(['troupe-worker']);
    const manifest = JSON.parse(readFileSync(path.join(installed, 'troupe-worker/package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.dependencies ?? {}).to.deep.equal({});
    const bundle = readFileSync(path.join(installed, 'troupe-worker/bin.mjs'), 'utf8');
    for (const name of SERVER_ONLY) expect(bundle.includes(`from "${name}"`) || bundle.includes(`require("${name}")`), name).to.equal(false);
    expect(sizeOf(installed), 'installed bytes').to.be.below(15 * 1024 * 1024);
    expect(installMs, 'npm install of the tarball, ms').to.be.below(10_000);
    const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    expect(execFileSync(path.join(prefix, 'node_modules/.bin/troupe-worker'), ['--version'], { encoding: 'utf8' }).trim(), '--version').to.equal(version);
  });

  it('runs a session to completed and drains on SIGTERM with exit 0, started directly', async () => {
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, executable: path.join(prefix, 'node_modules/.bin/troupe-worker') });
    await w.waitFor((l) => l.event === 'worker.registered', 20_000);
    const id = await dispatch(a, org, 'packed worker');
    expect((await untilStatus(a, org, id, ['completed', 'failed'])).status).to.equal('completed');
    w.child.kill('SIGTERM');
    const { code } = await w.exit;
    expect(code).to.equal(0);
    expect(w.lines.some((l) => l.event === 'worker.stopped')).to.equal(true);
  });
});
