// Invariant: the `troupe` CLI provisions through a running node with the admin token (org, user, key), verifies an
// org's audit chain (exit 2 when a link is broken), migrates storage without a node, prints JSON a script can parse,
// and fails with a one-line reason and a non-zero exit when the node refuses or cannot be reached.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { runCliCaptured as cli } from '../../support/cli.js';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';

for (const { set, skip } of engineSets) describe(`troupe CLI: provisioning and audit (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let dataDir: string;
  before(async () => {
    t = await startTestNode({ engines: set });
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-cli-'));
  });
  after(async () => {
    await t?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates an org, a user and a key, each printed as JSON', async () => {
    const org = await cli(['--url', t.url, '--admin-token', t.adminToken, 'org', 'create', '--name', 'Acme', '--owner', 'owner@acme.test']);
    expect(org.code, org.err).to.equal(0);
    const created = JSON.parse(org.out);
    expect(created.org.slug).to.equal('acme');
    expect(created.apiKey.fullKey).to.match(/^trp_[A-Za-z0-9]{40}$/);

    const user = await cli(['--url', t.url, '--admin-token', t.adminToken, 'user', 'create', '--org', created.org.id,
      '--email', 'dev@acme.test', '--role', 'member', '--project', `${created.project.id}:editor`]);
    expect(user.code, user.err).to.equal(0);
    expect(JSON.parse(user.out).user.email).to.equal('dev@acme.test');

    const key = await cli(['--url', t.url, 'key', 'create', '--org', created.org.id, '--name', 'ci', '--token', created.userToken]);
    expect(key.code, key.err).to.equal(0);
    const fullKey = JSON.parse(key.out).fullKey as string;
    expect((await t.call('GET', '/api/cli/whoami', { token: fullKey })).status).to.equal(200);
  });

  it('reads the admin token from the data dir when no flag or variable names it', async () => {
    writeFileSync(path.join(dataDir, 'admin-token'), `${t.adminToken}\n`, { mode: 0o600 });
    const saved = process.env.TROUPE_ADMIN_TOKEN;
    delete process.env.TROUPE_ADMIN_TOKEN;
    try {
      const r = await cli(['--url', t.url, '--data-dir', dataDir, 'org', 'create', '--name', 'Globex', '--owner', 'o@globex.test']);
      expect(r.code, r.err).to.equal(0);
    } finally {
      if (saved !== undefined) process.env.TROUPE_ADMIN_TOKEN = saved;
    }
  });

  it('verifies an org audit chain, and exits 2 once a row was tampered with', async () => {
    const org = JSON.parse((await cli(['--url', t.url, '--admin-token', t.adminToken, 'org', 'create', '--name', 'Audited', '--owner', 'a@audited.test'])).out);
    const made = await t.call('POST', `/api/projects/${org.project.id}/workflows`, { token: org.userToken, body: { name: 'wf' } });
    expect(made.status, made.text).to.equal(201);
    const good = await cli(['--url', t.url, '--admin-token', t.adminToken, 'audit', 'verify', '--org', org.org.id]);
    expect(good.code, good.err).to.equal(0);
    expect(JSON.parse(good.out)).to.include({ valid: true });

    const db = t.node.deps.db;
    await db.raw('alter table audit_log disable trigger user');
    await db('audit_log').where({ org_id: org.org.id }).update({ actor: 'mallory' });
    await db.raw('alter table audit_log enable trigger user');
    const bad = await cli(['--url', t.url, '--admin-token', t.adminToken, 'audit', 'verify', '--org', org.org.id]);
    expect(bad.code).to.equal(2);
    expect(JSON.parse(bad.out).valid).to.equal(false);
  });

  it('fails with a one-line reason on a refusal and on an unreachable node', async () => {
    const refused = await cli(['--url', t.url, '--admin-token', 'trpadm_wrong_token_0123456789abcdef', 'org', 'create', '--name', 'X', '--owner', 'x@x.test']);
    expect(refused.code).to.equal(1);
    expect(refused.err.trim().split('\n')).to.have.length(1);
    expect(refused.err).to.contain('401');
    const down = await cli(['--url', 'http://127.0.0.1:1', '--admin-token', t.adminToken, 'org', 'create', '--name', 'X', '--owner', 'x@x.test']);
    expect(down.code).to.equal(1);
    expect(down.err).to.contain('cannot reach Troupe');
  });
});

// The migrate command without a node works on the embedded data dir; on Postgres it would migrate the shared
// database's own schema, which a test must not touch.
describe('troupe CLI: migrations of an embedded data dir', function () {
  this.timeout(60_000);
  let dataDir: string;
  before(() => { dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-cli-')); });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('migrates PGlite under a data dir without a running node, and again as a no-op', async () => {
    const first = await cli(['--data-dir', dataDir, 'migrate']);
    expect(first.code, first.err).to.equal(0);
    expect(JSON.parse(first.out).applied).to.include('0001_actor_snapshots');
    const second = await cli(['--data-dir', dataDir, 'migrate']);
    expect(JSON.parse(second.out).applied).to.deep.equal([]);
  });
});
