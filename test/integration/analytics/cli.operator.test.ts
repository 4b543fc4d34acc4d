// Invariant: the operator commands `troupe fleet`, `troupe sessions --status running` and `troupe mutations --host`
// read the node's routes with an org credential and print a table a person can scan (a header row, one row per
// item) or, with --json, exactly the JSON the node answered; without a credential they fail with a reason.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, report, type Org } from '../sessions/support.js';
import { runCliCaptured as cli } from '../../support/cli.js';

for (const { set, skip } of engineSets) describe(`operator CLI views (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let running: string;
  let workerId: string;
  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    const daemon = await registerDaemon(t, acme, 'cli-host');
    workerId = daemon.workerId;
    running = await dispatch(t, acme, { trackerIssue: 'OPS-1' });
    await dispatch(t, acme);
    for (const s of ['claimed', 'running']) expect((await report(t, daemon, running, s, { phase: 'plan' })).status).to.equal(200);
    const enq = await t.call('POST', '/api/daemon/mutations', { token: acme.ownerToken, body: { workerHostId: workerId, op: 'pool.deleted', params: { poolId: 'p1' } } });
    expect(enq.status, enq.text).to.be.oneOf([200, 201]);
  });
  after(() => t?.close());

  it('troupe sessions --status running prints only running sessions as a table', async () => {
    const r = await cli(['--url', t.url, 'sessions', '--status', 'running', '--token', acme.apiKey]);
    expect(r.code, r.err).to.equal(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).to.match(/^ID\s+STATUS\s+PHASE/);
    expect(lines).to.have.length(2);
    expect(lines[1]).to.contain(running).and.contain('running').and.contain('OPS-1').and.contain('cli-host');
  });

  it('--json prints what the node answered; TROUPE_TOKEN works in place of --token', async () => {
    const r = await cli(['--url', t.url, 'sessions', '--json'], { TROUPE_TOKEN: acme.apiKey });
    expect(r.code, r.err).to.equal(0);
    const direct = await t.call('GET', '/api/fleet/sessions?limit=100', { token: acme.apiKey });
    expect(JSON.parse(r.out)).to.deep.equal(direct.json);
    expect(JSON.parse(r.out).sessions).to.have.length(2);
  });

  it('troupe fleet shows the fleet figures and troupe mutations --host the host history', async () => {
    const fleet = await cli(['--url', t.url, 'fleet', '--token', acme.apiKey]);
    expect(fleet.code, fleet.err).to.equal(0);
    expect(fleet.out).to.match(/^FIGURE\s+VALUE/);
    expect(fleet.out).to.match(/workers\.registered\s+1/);
    const mutations = await cli(['--url', t.url, 'mutations', '--host', workerId, '--token', acme.apiKey]);
    expect(mutations.code, mutations.err).to.equal(0);
    expect(mutations.out).to.match(/^ID\s+OP\s+STATUS/);
    expect(mutations.out).to.contain('pool.deleted').and.contain('pending');
    const json = await cli(['--url', t.url, 'mutations', '--host', workerId, '--json', '--token', acme.apiKey]);
    expect(JSON.parse(json.out).mutations).to.have.length(1);
  });

  it('fails with a reason and a non-zero exit without a credential or with another org\'s host', async () => {
    const none = await cli(['--url', t.url, 'fleet'], { TROUPE_TOKEN: undefined });
    expect(none.code).to.equal(1);
    expect(none.err).to.contain('no credential');
    const globex = await provisionOrg(t, 'Globex');
    const foreign = await cli(['--url', t.url, 'mutations', '--host', workerId, '--token', globex.apiKey]);
    expect(foreign.code).to.equal(1);
    expect(foreign.err).to.contain('404');
  });
});
