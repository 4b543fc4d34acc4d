// Invariant: identity, key, credential, login and session-control events reach the org's hash chain (through the
// durable audit outbox), `troupe audit verify` checks them, and another org's chain holds none of them.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { runCliCaptured } from '../../support/cli.js';
import { dispatch, provisionOrg, type Org } from '../sessions/support.js';
import { auditOutboxDepth } from '../../../storage/audit-outbox.js';

interface Entry { type: string; actor: string; subject: string | null; payload: Record<string, unknown> }

async function chainOf(t: TestNode, org: Org): Promise<Entry[]> {
  for (let i = 0; i < 100 && (await auditOutboxDepth(t.node.deps.db)) > 0; i++) await new Promise((r) => setTimeout(r, 50));
  const res = await t.inject('GET', '/api/audit?limit=500', { token: org.ownerToken });
  expect(res.status, res.text).to.equal(200);
  return (res.json.entries as Entry[]).reverse();
}

for (const { set, skip } of engineSets) {
  describe(`audit trail of identity and session control on ${set} engines`, function () {
    if (skip) return;
    this.timeout(60_000);
    let t: TestNode;
    before(async () => { t = await startTestNode({ engines: set }); });
    after(async () => { await t?.close(); });

    it('records provisioning, members, logins, keys, tokens, credentials and session control, and the chain verifies', async () => {
      const acme = await provisionOrg(t, 'Audited');
      const globex = await provisionOrg(t, 'Elsewhere');
      const email = `dev-${Date.now()}@audited.test`;
      const dev = await t.inject('POST', `/api/admin/orgs/${acme.orgId}/users`, { token: t.adminToken, body: { email, role: 'admin', password: 'correct horse battery' } });
      expect(dev.status, dev.text).to.equal(201);
      const devId = dev.json.user.id as string;
      expect((await t.inject('POST', '/api/auth/login', { body: { email, password: 'wrong password!' } })).status).to.equal(401);
      const login = await t.inject('POST', '/api/auth/login', { body: { email, password: 'correct horse battery' } });
      expect(login.status, login.text).to.equal(200);
      const token = login.json.userToken as string;
      const key = await t.inject('POST', `/api/org/${acme.orgId}/keys`, { token, body: { name: 'ci', scopes: ['read'] } });
      expect(key.status, key.text).to.equal(201);
      expect((await t.inject('DELETE', `/api/org/${acme.orgId}/keys/${key.json.id}`, { token })).status).to.equal(200);
      const reg = await t.inject('POST', `/api/org/${acme.orgId}/registration-tokens`, { token, body: { name: 'ci hosts' } });
      expect(reg.status, reg.text).to.equal(201);
      expect((await t.inject('DELETE', `/api/org/${acme.orgId}/registration-tokens/${reg.json.id}`, { token })).status).to.equal(200);
      expect((await t.inject('PUT', `/api/org/${acme.orgId}/credentials/github-token`, { token, body: { provider: 'static', value: 's3cret-value' } })).status).to.equal(200);
      const rotate = await t.inject('POST', '/api/daemon/credentials/rotate', { token, body: { orgId: acme.orgId, kind: 'github-token' } });
      expect(rotate.status, rotate.text).to.equal(200);
      const sessionId = await dispatch(t, acme);
      expect((await t.inject('POST', `/api/public/sessions/${sessionId}/prompt`, { token, body: { prompt: 'private words' } })).status).to.equal(200);
      expect((await t.inject('POST', `/api/public/sessions/${sessionId}/stop`, { token })).status).to.equal(200);
      expect((await t.inject('POST', '/api/auth/logout', { token })).status).to.equal(200);

      const chain = await chainOf(t, acme);
      const types = chain.map((e) => e.type);
      for (const type of [
        'org.provisioned', 'key.created', 'registration_token.created', 'member.provisioned', 'auth.login_failed', 'auth.login',
        'key.revoked', 'registration_token.revoked', 'credential.stored', 'credential.rotated', 'session.prompted', 'session.stopped', 'auth.logout',
      ]) expect(types, type).to.include(type);
      expect(chain.find((e) => e.type === 'auth.login')).to.deep.include({ actor: `user:${devId}`, subject: devId });
      expect(chain.find((e) => e.type === 'key.revoked')).to.deep.include({ actor: `user:${devId}`, subject: key.json.id });
      expect(chain.find((e) => e.type === 'session.stopped')).to.deep.include({ subject: sessionId });
      const text = JSON.stringify(chain);
      for (const secret of ['s3cret-value', 'private words', 'correct horse battery', key.json.fullKey, reg.json.registrationToken]) {
        expect(text, 'no secret or prose in the chain').not.to.include(secret);
      }

      const verify = await runCliCaptured(['--url', t.url, '--admin-token', t.adminToken, 'audit', 'verify', '--org', acme.orgId]);
      expect(verify.code, verify.err).to.equal(0);
      const verified = JSON.parse(verify.out) as { valid: boolean; checked: number };
      expect(verified.valid).to.equal(true);
      expect(verified.checked).to.equal(chain.length);
      expect(verified.checked).to.be.at.least(13);

      const theirs = await chainOf(t, globex);
      expect(JSON.stringify(theirs)).not.to.include(acme.orgId);
      expect(theirs.map((e) => e.subject)).not.to.include(sessionId);
    });
  });
}
