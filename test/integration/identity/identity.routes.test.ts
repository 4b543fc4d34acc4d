/**
 * Invariant: through the node's edge pipeline (injected, no socket), identity routes provision orgs and credentials, authenticate each
 * scheme only where it belongs (admin vs org vs human), keep every org's keys, teams and members invisible to
 * other orgs, stop a revoked key at once, and answer malformed bodies with 400 naming the field.
 */
import { expect } from 'chai';
import { TroupeError } from '../../../ops/kernel/errors.js';
import sinon from 'sinon';
import { startTestNode, type EngineSet, type TestNode } from '../../support/node.js';
import { skipEngine } from '../../support/engines.js';
import { verifyRegistrationToken } from '../../../actors/services/identity/registration.js';

const json = (token?: string) => (token === undefined ? {} : { token });

interface Provisioned {
  org: { id: string; slug: string };
  owner: { id: string; email: string };
  project: { id: string };
  userToken: string;
  apiKey: { id: string; fullKey: string };
  registrationToken: string;
}

const engineSets: Array<{ set: EngineSet; skip: boolean }> = [
  { set: 'embedded', skip: false },
  { set: 'real', skip: skipEngine.postgres || skipEngine.amqp || skipEngine.redis },
];

for (const { set, skip } of engineSets) describe(`identity routes (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let node: TestNode;
  let acme: Provisioned;
  let globex: Provisioned;
  const admin = () => ({ token: node.adminToken });

  async function provision(name: string, email: string, password?: string): Promise<Provisioned> {
    const r = await node.inject('POST', '/api/admin/orgs', { ...admin(), body: { name, owner: { email, firstName: 'Ada', ...(password ? { password } : {}) } } });
    expect(r.status, r.text).to.equal(201);
    return r.json as Provisioned;
  }

  before(async () => {
    node = await startTestNode({ engines: set });
    acme = await provision('Acme Corp', 'owner@acme.test', 'correct horse battery');
    globex = await provision('Globex', 'owner@globex.test');
  });
  after(() => node?.close());

  describe('POST /api/admin/orgs', () => {
    it('creates org, owner, default project and working credentials', async () => {
      expect(acme.org.slug).to.equal('acme-corp');
      expect(acme.apiKey.fullKey).to.match(/^trp_[0-9A-Za-z]{40}$/);
      expect(acme.registrationToken).to.match(/^trg_[0-9A-Za-z]{40}$/);
      const me = await node.inject('GET', '/api/cli/whoami', json(acme.userToken));
      expect(me.status).to.equal(200);
      expect(me.json.user).to.deep.equal({ id: acme.owner.id, email: 'owner@acme.test', firstName: 'Ada', lastName: null, profilePictureUrl: null });
      expect(me.json.org).to.deep.equal({ id: acme.org.id, name: 'Acme Corp', slug: 'acme-corp', plan: 'free' });
      expect(me.json.projects.map((p: { slug: string }) => p.slug)).to.deep.equal(['default']);
      const viaKey = await node.inject('GET', '/api/cli/whoami', json(acme.apiKey.fullKey));
      expect(viaKey.status).to.equal(200);
      // A key acts as no user (decision 0069): whoami names it, and the owner who created it, apart.
      expect(viaKey.json.user).to.equal(null);
      expect(viaKey.json.apiKey).to.include({ id: acme.apiKey.id, createdBy: acme.owner.id });
      expect(viaKey.json.scopes).to.deep.equal(['admin']);
    });
    it('reuses an existing user as owner of a second org', async () => {
      const second = await provision('Acme Labs', 'OWNER@acme.test');
      expect(second.owner.id).to.equal(acme.owner.id);
      const list = await node.inject('GET', '/api/org/list', json(acme.userToken));
      expect(list.json.activeOrgId).to.equal(acme.org.id);
      expect(list.json.orgs.map((o: { id: string; role: string }) => [o.id, o.role])).to.deep.equal([[acme.org.id, 'owner'], [second.org.id, 'owner']]);
    });
    it('refuses a taken explicit slug with 409', async () => {
      const r = await node.inject('POST', '/api/admin/orgs', { ...admin(), body: { name: 'x', slug: 'acme-corp', owner: { email: 'x@x.test' } } });
      expect(r.status).to.equal(409);
    });
    it('takes back an org whose credentials could not be issued, so the same request succeeds when sent again', async () => {
      const deps = node.node.deps;
      const ask = deps.ask.bind(deps);
      // The broker fails after the org actor has stored the provisioning key, before the registration token.
      const outage = sinon.stub(deps, 'ask').callsFake(async (address: string, message: unknown, timeoutMs?: number) => {
        if ((message as { type?: string }).type === 'org.issueRegistrationToken') throw new TroupeError('TRANSPORT_UNAVAILABLE', 'broker down (test)');
        return ask(address, message, timeoutMs);
      });
      const body = { name: 'Half Ltd', slug: 'half-ltd', owner: { email: 'half@half.test' } };
      try {
        expect((await node.inject('POST', '/api/admin/orgs', { ...admin(), body })).status).to.equal(503);
      } finally {
        outage.restore();
      }
      expect(await deps.db('orgs').where({ slug: 'half-ltd' }).first()).to.equal(undefined);
      expect(await deps.db('users').where({ email: 'half@half.test' }).first(), 'the owner it created').to.equal(undefined);
      const orphanKeys = await deps.db('api_keys').leftJoin('orgs', 'orgs.id', 'api_keys.org_id').whereNull('orgs.id').count({ n: '*' });
      expect(Number(orphanKeys[0]!.n)).to.equal(0);

      const again = await node.inject('POST', '/api/admin/orgs', { ...admin(), body });
      expect(again.status, again.text).to.equal(201);
      expect((await node.inject('GET', '/api/cli/whoami', json(again.json.apiKey.fullKey))).status).to.equal(200);
    });
    it('keeps an owner who already existed when taking back a failed org', async () => {
      const deps = node.node.deps;
      const outage = sinon.stub(deps, 'ask').rejects(new TroupeError('TRANSPORT_UNAVAILABLE', 'broker down (test)'));
      try {
        const r = await node.inject('POST', '/api/admin/orgs', { ...admin(), body: { name: 'Owner Again', owner: { email: 'owner@acme.test' } } });
        expect(r.status).to.equal(503);
      } finally {
        outage.restore();
      }
      expect(await deps.db('users').where({ id: acme.owner.id }).first()).to.not.equal(undefined);
      expect((await node.inject('GET', '/api/cli/whoami', json(acme.userToken))).status).to.equal(200);
    });
    it('refuses org credentials (403), missing (401) and invalid (401) credentials', async () => {
      const body = { name: 'x', owner: { email: 'x@x.test' } };
      expect((await node.inject('POST', '/api/admin/orgs', { token: acme.userToken, body })).status).to.equal(403);
      expect((await node.inject('POST', '/api/admin/orgs', { token: acme.apiKey.fullKey, body })).status).to.equal(403);
      expect((await node.inject('POST', '/api/admin/orgs', { body })).status).to.equal(401);
      expect((await node.inject('POST', '/api/admin/orgs', { token: 'trp_nope', body })).status).to.equal(401);
    });
    it('answers malformed bodies with 400 naming the field', async () => {
      const r = await node.inject('POST', '/api/admin/orgs', { ...admin(), body: { name: 'x', owner: { email: 'not-an-email' } } });
      expect(r.status).to.equal(400);
      expect(r.json.error).to.contain('owner.email');
      const extra = await node.inject('POST', '/api/admin/orgs', { ...admin(), body: { name: 'x', owner: { email: 'a@b.test' }, evil: 1 } });
      expect(extra.status).to.equal(400);
      expect(extra.json.error).to.contain('evil');
    });
  });

  describe('POST /api/admin/orgs/:orgId/users', () => {
    it('adds a member with project roles, and 404s unknown orgs and foreign projects', async () => {
      const r = await node.inject('POST', `/api/admin/orgs/${acme.org.id}/users`, {
        ...admin(), body: { email: 'mia@acme.test', role: 'member', password: 'member password', projects: [{ id: acme.project.id, role: 'viewer' }] },
      });
      expect(r.status, r.text).to.equal(201);
      const me = await node.inject('GET', '/api/cli/whoami', json(r.json.userToken));
      expect(me.json.scopes).to.deep.equal(['write', 'read']);
      expect(me.json.projects[0].role).to.equal('viewer');
      const unknownOrg = await node.inject('POST', '/api/admin/orgs/00000000-0000-4000-8000-000000000000/users', { ...admin(), body: { email: 'a@b.test', role: 'member' } });
      expect(unknownOrg.status).to.equal(404);
      const foreign = await node.inject('POST', `/api/admin/orgs/${acme.org.id}/users`, {
        ...admin(), body: { email: 'b@b.test', role: 'member', projects: [{ id: globex.project.id, role: 'admin' }] },
      });
      expect(foreign.status).to.equal(404);
    });

    it('shows a changed role in whoami at once, although whoami is memoised', async () => {
      const first = await node.inject('POST', `/api/admin/orgs/${acme.org.id}/users`, { ...admin(), body: { email: 'rolf@acme.test', role: 'viewer' } });
      expect((await node.inject('GET', '/api/cli/whoami', json(first.json.userToken))).json.scopes).to.deep.equal(['read']);
      const promoted = await node.inject('POST', `/api/admin/orgs/${acme.org.id}/users`, { ...admin(), body: { email: 'rolf@acme.test', role: 'admin' } });
      expect(promoted.status, promoted.text).to.equal(201);
      const me = await node.inject('GET', '/api/cli/whoami', json(first.json.userToken));
      expect(me.json.scopes).to.deep.equal(['admin', 'write', 'read']);
      expect((await node.inject('POST', `/api/admin/orgs/${acme.org.id}/users`, { ...admin(), body: { email: 'c@b.test', role: 'god' } })).status).to.equal(400);
    });
    it('a demotion applies to tokens already issued', async () => {
      const add = await node.inject('POST', `/api/admin/orgs/${acme.org.id}/users`, { ...admin(), body: { email: 'dee@acme.test', role: 'admin' } });
      const token = add.json.userToken as string;
      expect((await node.inject('POST', `/api/org/${acme.org.id}/keys`, { token, body: { name: 'k' } })).status).to.equal(201);
      await node.inject('POST', `/api/admin/orgs/${acme.org.id}/users`, { ...admin(), body: { email: 'dee@acme.test', role: 'viewer' } });
      expect((await node.inject('POST', `/api/org/${acme.org.id}/keys`, { token, body: { name: 'k' } })).status).to.equal(403);
    });
  });

  describe('login and logout', () => {
    it('sets an HttpOnly session cookie that authenticates', async () => {
      const r = await node.inject('POST', '/api/auth/login', { body: { email: 'owner@acme.test', password: 'correct horse battery' } });
      expect(r.status, r.text).to.equal(200);
      expect(r.json.orgId).to.equal(acme.org.id);
      const cookie = r.headers.get('set-cookie') ?? '';
      expect(cookie).to.match(/^troupe_session=[^;]+; HttpOnly; SameSite=Lax; Path=\//);
      expect(cookie).to.not.contain('Secure');
      const session = cookie.split(';')[0]!;
      const me = await node.inject('GET', '/api/cli/whoami', { headers: { cookie: `other=1; ${session}` } });
      expect(me.status).to.equal(200);
      expect(me.json.user.id).to.equal(acme.owner.id);
      const out = await node.inject('POST', '/api/auth/logout');
      expect(out.status).to.equal(200);
      expect(out.headers.get('set-cookie')).to.match(/^troupe_session=; .*Max-Age=0/);
    });
    it('wrong password, unknown email and a passwordless user are the same 401', async () => {
      const answers = await Promise.all([
        node.inject('POST', '/api/auth/login', { body: { email: 'owner@acme.test', password: 'wrong password' } }),
        node.inject('POST', '/api/auth/login', { body: { email: 'nobody@acme.test', password: 'wrong password' } }),
        node.inject('POST', '/api/auth/login', { body: { email: 'owner@globex.test', password: 'wrong password' } }),
      ]);
      for (const a of answers) expect([a.status, a.json]).to.deep.equal([401, { error: 'email or password is wrong', code: 'AUTH_INVALID' }]);
    });
    it('logs into a named org only when a member of it', async () => {
      const r = await node.inject('POST', '/api/auth/login', { body: { email: 'owner@acme.test', password: 'correct horse battery', orgId: globex.org.id } });
      expect(r.status).to.equal(401);
    });
    it('refuses a forged or garbage session cookie', async () => {
      expect((await node.inject('GET', '/api/cli/whoami', { headers: { cookie: 'troupe_session=abc.def.ghi' } })).status).to.equal(401);
    });
  });

  describe('API keys', () => {
    it('issues a key that works, then revokes it so it stops at once', async () => {
      const created = await node.inject('POST', `/api/org/${acme.org.id}/keys`, { token: acme.userToken, body: { name: 'ci', scopes: ['read'] } });
      expect(created.status, created.text).to.equal(201);
      expect(created.json).to.include({ name: 'ci' });
      expect(created.json.prefix).to.equal(created.json.fullKey.slice(4, 12));
      const key = created.json.fullKey as string;
      expect((await node.inject('GET', '/api/cli/whoami', json(key))).status).to.equal(200);
      const revoked = await node.inject('DELETE', `/api/org/${acme.org.id}/keys/${created.json.id}`, json(acme.userToken));
      expect(revoked.status, revoked.text).to.equal(200);
      expect(revoked.json.revoked).to.equal(true);
      expect((await node.inject('GET', '/api/cli/whoami', json(key))).status).to.equal(401);
      // Revoking again is idempotent.
      expect((await node.inject('DELETE', `/api/org/${acme.org.id}/keys/${created.json.id}`, json(acme.userToken))).status).to.equal(200);
    });
    it('keeps the deprecated alias working with Deprecation and Link headers', async () => {
      const r = await node.inject('POST', '/api/org/api-keys', { token: acme.apiKey.fullKey, body: { name: 'old client' } });
      expect(r.status, r.text).to.equal(201);
      expect(r.json.fullKey).to.match(/^trp_/);
      expect(r.json.scopes).to.deep.equal(['read', 'write']);
      expect(r.headers.get('deprecation')).to.equal('true');
      expect(r.headers.get('link')).to.equal(`</api/org/${acme.org.id}/keys>; rel="successor-version"`);
    });
    it('refuses another org in the path (403), another org\'s key (404), and members (403)', async () => {
      expect((await node.inject('POST', `/api/org/${globex.org.id}/keys`, { token: acme.userToken, body: { name: 'x' } })).status).to.equal(403);
      expect((await node.inject('DELETE', `/api/org/${acme.org.id}/keys/${globex.apiKey.id}`, json(acme.userToken))).status).to.equal(404);
      expect((await node.inject('DELETE', `/api/org/${acme.org.id}/keys/not-a-uuid`, json(acme.userToken))).status).to.equal(404);
      expect((await node.inject('GET', '/api/cli/whoami', json(globex.apiKey.fullKey))).status).to.equal(200);
      const member = await node.inject('POST', `/api/admin/orgs/${acme.org.id}/users`, { ...admin(), body: { email: 'max@acme.test', role: 'member' } });
      expect((await node.inject('POST', `/api/org/${acme.org.id}/keys`, { token: member.json.userToken, body: { name: 'x' } })).status).to.equal(403);
      const readKey = await node.inject('POST', `/api/org/${acme.org.id}/keys`, { token: acme.userToken, body: { name: 'ro', scopes: ['read'] } });
      expect((await node.inject('POST', `/api/org/${acme.org.id}/keys`, { token: readKey.json.fullKey, body: { name: 'x' } })).status).to.equal(403);
    });
    it('refuses the admin token on org routes and bad bodies with 400', async () => {
      expect((await node.inject('POST', `/api/org/${acme.org.id}/keys`, { ...admin(), body: { name: 'x' } })).status).to.equal(403);
      const bad = await node.inject('POST', `/api/org/${acme.org.id}/keys`, { token: acme.userToken, body: { name: 'x', scopes: ['ADMIN!'] } });
      expect(bad.status).to.equal(400);
      expect(bad.json.error).to.contain('scopes');
    });
  });

  describe('registration tokens', () => {
    it('issues for own projects, 404s foreign projects, revokes', async () => {
      const r = await node.inject('POST', `/api/org/${acme.org.id}/registration-tokens`, { token: acme.userToken, body: { name: 'fleet', projects: [acme.project.id] } });
      expect(r.status, r.text).to.equal(201);
      expect(r.json.registrationToken).to.match(/^trg_/);
      const foreign = await node.inject('POST', `/api/org/${acme.org.id}/registration-tokens`, { token: acme.userToken, body: { projects: [globex.project.id] } });
      expect(foreign.status).to.equal(404);
      const db = node.node.deps.db;
      expect(await verifyRegistrationToken(db, r.json.registrationToken)).to.deep.equal({ registrationId: r.json.id, orgId: acme.org.id, projects: [acme.project.id] });
      const presented = r.json.registrationToken as string;
      expect(await verifyRegistrationToken(db, `${presented.slice(0, -1)}${presented.endsWith('0') ? '1' : '0'}`)).to.equal(undefined);
      expect((await node.inject('DELETE', `/api/org/${acme.org.id}/registration-tokens/${r.json.id}`, json(acme.userToken))).status).to.equal(200);
      expect(await verifyRegistrationToken(db, r.json.registrationToken)).to.equal(undefined);
      expect((await node.inject('DELETE', `/api/org/${globex.org.id}/registration-tokens/${r.json.id}`, json(acme.userToken))).status).to.equal(403);
    });
  });

  describe('teams', () => {
    it('creates, adds members of the org only, lists them enriched; another org sees 404', async () => {
      const team = await node.inject('POST', '/api/org/teams', { token: acme.userToken, body: { name: 'Platform' } });
      expect(team.status, team.text).to.equal(201);
      const teamId = team.json.team.id as string;
      const added = await node.inject('POST', `/api/org/teams/${teamId}/members`, { token: acme.userToken, body: { userId: acme.owner.id, role: 'maintainer' } });
      expect(added.status, added.text).to.equal(201);
      expect((await node.inject('POST', `/api/org/teams/${teamId}/members`, { token: acme.userToken, body: { userId: globex.owner.id } })).status).to.equal(404);
      const members = await node.inject('GET', `/api/org/teams/${teamId}/members`, json(acme.apiKey.fullKey));
      expect(members.status).to.equal(200);
      expect(members.json.members).to.have.length(1);
      expect(members.json.members[0]).to.deep.include({ userId: acme.owner.id, role: 'maintainer' });
      expect(members.json.members[0].user.email).to.equal('owner@acme.test');
      expect((await node.inject('GET', `/api/org/teams/${teamId}/members`, json(globex.userToken))).status).to.equal(404);
      expect((await node.inject('POST', `/api/org/teams/${teamId}/members`, { token: globex.userToken, body: { userId: globex.owner.id } })).status).to.equal(404);
      expect((await node.inject('GET', '/api/org/teams/nope/members', json(acme.userToken))).status).to.equal(404);
      const bad = await node.inject('POST', `/api/org/teams/${teamId}/members`, { token: acme.userToken, body: {} });
      expect(bad.status).to.equal(400);
      expect(bad.json.error).to.contain('userId');
    });
    it('a viewer reads teams but cannot create them', async () => {
      const viewer = await node.inject('POST', `/api/admin/orgs/${acme.org.id}/users`, { ...admin(), body: { email: 'vic@acme.test', role: 'viewer' } });
      expect((await node.inject('POST', '/api/org/teams', { token: viewer.json.userToken, body: { name: 'x' } })).status).to.equal(403);
    });
  });

  describe('OpenAPI', () => {
    it('documents every identity route', async () => {
      const doc = await node.inject('GET', '/api/openapi.json');
      expect(doc.status).to.equal(200);
      for (const path of ['/api/admin/orgs', '/api/auth/login', '/api/cli/whoami', '/api/org/{orgId}/keys', '/api/org/api-keys', '/api/org/teams/{id}/members']) {
        expect(doc.json.paths, path).to.have.property(path);
      }
    });
  });
});
