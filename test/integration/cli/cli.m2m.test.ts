// Invariant: `troupe m2m rotate|revoke|list` drive the admin machine-client routes of a running node and print
// their JSON: a rotation's new secret obtains tokens, a revocation ends the client, a listing never shows a secret,
// and a refusal (unknown client, bad overlap) is a one-line reason with a non-zero exit.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { runCliCaptured as cli } from '../../support/cli.js';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provisionOrg } from '../governance/governance-fixtures.js';

for (const { set, skip } of engineSets) describe(`troupe CLI: machine clients (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  before(async () => { t = await startTestNode({ engines: set }); });
  after(async () => { await t?.close(); });

  it('rotates, lists and revokes a client', async () => {
    const org = await provisionOrg(t);
    const created = await t.call('POST', '/api/admin/m2m-clients', { token: t.adminToken, body: { orgId: org.orgId, name: 'ci', scopes: ['read'] } });
    expect(created.status, created.text).to.equal(201);
    const { clientId, clientSecret } = created.json as { clientId: string; clientSecret: string };
    const admin = ['--url', t.url, '--admin-token', t.adminToken, 'm2m'];
    const token = (secret: string) => t.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret } });

    const rotated = await cli([...admin, 'rotate', clientId, '--overlap', '0']);
    expect(rotated.code, rotated.err).to.equal(0);
    const newSecret = JSON.parse(rotated.out).clientSecret as string;
    expect((await token(clientSecret)).status, 'overlap 0 ended the old secret').to.equal(401);
    expect((await token(newSecret)).status).to.equal(200);

    const listed = await cli([...admin, 'list', '--org', org.orgId]);
    expect(listed.code, listed.err).to.equal(0);
    expect(JSON.parse(listed.out).clients.map((c: { clientId: string }) => c.clientId)).to.deep.equal([clientId]);
    expect(listed.out).to.not.include(newSecret);

    const revoked = await cli([...admin, 'revoke', clientId]);
    expect(revoked.code, revoked.err).to.equal(0);
    expect(JSON.parse(revoked.out)).to.include({ clientId, revoked: true });
    expect((await token(newSecret)).status).to.equal(401);
  });

  it('fails with a reason for an unknown client or a bad overlap', async () => {
    const admin = ['--url', t.url, '--admin-token', t.adminToken, 'm2m'];
    const unknown = await cli([...admin, 'revoke', randomUUID()]);
    expect(unknown.code).to.equal(1);
    expect(unknown.err).to.match(/404 NOT_FOUND/);
    const bad = await cli([...admin, 'rotate', randomUUID(), '--overlap', 'soon']);
    expect(bad.code).to.equal(1);
    expect(bad.err).to.include('whole number of seconds');
  });
});
