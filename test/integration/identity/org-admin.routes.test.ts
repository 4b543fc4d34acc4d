// Invariant: an org's admins run its people and credentials through the API the console uses (issue 37 §2): members
// listed, added, re-roled and removed, with only an owner making, unmaking or removing an owner and the last owner
// kept; API keys and registration tokens listed without their secrets; teams listed and relieved of members; the
// org's integrations listed and an OAuth connection forgotten. Another org's member, team or path is never reached
// (404, or 403 TENANT_MISMATCH for a path naming another org), a role without the right gets 403, a malformed body
// 400, and none of those changes anything.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { addUser, provision, type Org } from '../agents/fixtures.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';
import { changeMemberRole, removeMember } from '../../../storage/identity/org-admin.js';

const PASSWORD = 'correct horse battery staple';

for (const { set, skip } of engineSets) describe(`org administration routes (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let admin: { userId: string; token: string };
  let member: { userId: string; token: string };
  let viewer: { userId: string; token: string };

  const members = async (org: Org) => {
    const r = await t.call('GET', `/api/org/${org.orgId}/members`, { token: org.ownerToken });
    expect(r.status, r.text).to.equal(200);
    return r.json.members as { user: { id: string; email: string }; role: string; hasPassword: boolean }[];
  };
  const roleOf = async (org: Org, userId: string) => (await members(org)).find((m) => m.user.id === userId)?.role;

  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provision(t);
    globex = await provision(t);
    admin = await addUser(t, acme.orgId, 'admin');
    member = await addUser(t, acme.orgId, 'member');
    viewer = await addUser(t, acme.orgId, 'viewer');
  });
  after(() => t?.close());

  describe('members', () => {
    it('lists the org\'s members with their roles to anyone in it, and nobody else\'s', async () => {
      const list = await members(acme);
      expect(list.map((m) => [m.user.id, m.role])).to.deep.equal([[acme.ownerId, 'owner'], [admin.userId, 'admin'], [member.userId, 'member'], [viewer.userId, 'viewer']]);
      const byViewer = await t.call('GET', `/api/org/${acme.orgId}/members`, { token: viewer.token });
      expect(byViewer.status).to.equal(200);
      const across = await t.call('GET', `/api/org/${globex.orgId}/members`, { token: acme.ownerToken });
      expect(across.status).to.equal(403);
      expect(across.json.code).to.equal('TENANT_MISMATCH');
    });

    it('adds a new person with a password they can sign in with, once', async () => {
      const email = `new-${randomUUID().slice(0, 8)}@acme.test`;
      const r = await t.call('POST', `/api/org/${acme.orgId}/members`, { token: admin.token, body: { email, role: 'member', password: PASSWORD, firstName: 'Grace' } });
      expect(r.status, r.text).to.equal(201);
      expect(r.json.created).to.equal(true);
      expect(r.json.member).to.deep.include({ role: 'member', hasPassword: true });
      const login = await t.call('POST', '/api/auth/login', { body: { email, password: PASSWORD } });
      expect(login.status, login.text).to.equal(200);
      expect(login.json.orgId).to.equal(acme.orgId);
      const again = await t.call('POST', `/api/org/${acme.orgId}/members`, { token: admin.token, body: { email: email.toUpperCase(), role: 'admin' } });
      expect(again.status).to.equal(409);
      expect(await roleOf(acme, r.json.member.user.id)).to.equal('member');
    });

    it('adds an existing user of another org without touching how they sign in', async () => {
      const globexOwner = (await members(globex))[0]!;
      expect(globexOwner.hasPassword).to.equal(false);
      const r = await t.call('POST', `/api/org/${acme.orgId}/members`, { token: acme.ownerToken, body: { email: globexOwner.user.email, role: 'viewer', password: PASSWORD } });
      expect(r.status, r.text).to.equal(201);
      expect(r.json).to.deep.include({ created: false });
      expect(r.json.member.hasPassword).to.equal(false);
      const login = await t.call('POST', '/api/auth/login', { body: { email: globexOwner.user.email, password: PASSWORD } });
      expect(login.status).to.equal(401);
      expect(await roleOf(globex, globexOwner.user.id)).to.equal('owner');
    });

    it('refuses roles without the right, an admin making an owner, and malformed bodies, adding nobody', async () => {
      const before = (await members(acme)).length;
      const body = (role: string) => ({ email: `x-${randomUUID().slice(0, 8)}@acme.test`, role });
      for (const [token, role] of [[member.token, 'member'], [viewer.token, 'viewer'], [admin.token, 'owner']] as const) {
        const r = await t.call('POST', `/api/org/${acme.orgId}/members`, { token, body: body(role) });
        expect(r.status, `${role}: ${r.text}`).to.equal(403);
      }
      for (const bad of [{ email: 'not-an-email', role: 'member' }, { email: 'a@b.test', role: 'god' }, { email: 'a@b.test', role: 'member', isAdmin: true }, { email: 'a@b.test', role: 'member', password: 'short' }]) {
        const r = await t.call('POST', `/api/org/${acme.orgId}/members`, { token: acme.ownerToken, body: bad });
        expect(r.status, JSON.stringify(bad)).to.equal(400);
      }
      const across = await t.call('POST', `/api/org/${globex.orgId}/members`, { token: acme.ownerToken, body: body('member') });
      expect(across.status).to.equal(403);
      expect((await members(acme)).length).to.equal(before);
      expect((await members(globex)).length).to.equal(1);
    });

    it('changes a role, which the member\'s own token acts at from its next request', async () => {
      const person = await addUser(t, acme.orgId, 'member');
      const r = await t.call('PATCH', `/api/org/${acme.orgId}/members/${person.userId}`, { token: admin.token, body: { role: 'viewer' } });
      expect(r.status, r.text).to.equal(200);
      expect(r.json.member.role).to.equal('viewer');
      const list = await t.call('GET', '/api/org/list', { token: person.token });
      expect(list.json.orgs[0].role).to.equal('viewer');
      const dispatch = await t.call('POST', '/api/agent-dispatch', { token: person.token, body: { projectId: (await t.call('GET', '/api/cli/whoami', { token: person.token })).json.projects[0].id, prompt: 'x' } });
      expect(dispatch.status).to.equal(403);
    });

    it('keeps owners an owner\'s business and the last owner in place', async () => {
      const demoteOwner = await t.call('PATCH', `/api/org/${acme.orgId}/members/${acme.ownerId}`, { token: admin.token, body: { role: 'member' } });
      expect(demoteOwner.status).to.equal(403);
      const promote = await t.call('PATCH', `/api/org/${acme.orgId}/members/${member.userId}`, { token: admin.token, body: { role: 'owner' } });
      expect(promote.status).to.equal(403);
      const removeOwner = await t.call('DELETE', `/api/org/${acme.orgId}/members/${acme.ownerId}`, { token: admin.token });
      expect(removeOwner.status).to.equal(403);
      const selfDemote = await t.call('PATCH', `/api/org/${acme.orgId}/members/${acme.ownerId}`, { token: acme.ownerToken, body: { role: 'admin' } });
      expect(selfDemote.status).to.equal(409);
      const selfRemove = await t.call('DELETE', `/api/org/${acme.orgId}/members/${acme.ownerId}`, { token: acme.ownerToken });
      expect(selfRemove.status).to.equal(409);
      expect(await roleOf(acme, acme.ownerId)).to.equal('owner');
      const byMember = await t.call('PATCH', `/api/org/${acme.orgId}/members/${viewer.userId}`, { token: member.token, body: { role: 'admin' } });
      expect(byMember.status).to.equal(403);
      expect(await roleOf(acme, viewer.userId)).to.equal('viewer');
    });

    it('answers 404 for a member of another org or a malformed id, and 400 for a role that is none', async () => {
      const outsider = await addUser(t, globex.orgId, 'member');
      for (const id of [outsider.userId, 'not-a-uuid', randomUUID()]) {
        expect((await t.call('PATCH', `/api/org/${acme.orgId}/members/${id}`, { token: acme.ownerToken, body: { role: 'viewer' } })).status, id).to.equal(404);
        expect((await t.call('DELETE', `/api/org/${acme.orgId}/members/${id}`, { token: acme.ownerToken })).status, id).to.equal(404);
      }
      expect(await roleOf(globex, outsider.userId)).to.equal('member');
      const bad = await t.call('PATCH', `/api/org/${acme.orgId}/members/${viewer.userId}`, { token: acme.ownerToken, body: { role: 'root' } });
      expect(bad.status).to.equal(400);
    });

    it('never overwrites a role changed between the authorization and the write (an admin racing an owner)', async () => {
      const person = await addUser(t, acme.orgId, 'member');
      // The owner made them an owner after the admin's request was authorized against "member".
      expect((await t.call('PATCH', `/api/org/${acme.orgId}/members/${person.userId}`, { token: acme.ownerToken, body: { role: 'owner' } })).status).to.equal(200);
      expect(await changeMemberRole(t.node.deps.db, acme.orgId, person.userId, 'member', 'viewer')).to.equal('moved');
      expect(await removeMember(t.node.deps.db, acme.orgId, person.userId, 'member')).to.equal('moved');
      expect(await roleOf(acme, person.userId)).to.equal('owner');
      expect(await changeMemberRole(t.node.deps.db, acme.orgId, person.userId, 'owner', 'member')).to.equal('done');
      expect(await roleOf(acme, person.userId)).to.equal('member');
    });

    it('removes a member from the org and its teams; their token stops working there at once', async () => {
      const person = await addUser(t, acme.orgId, 'member');
      const team = await t.call('POST', '/api/org/teams', { token: acme.ownerToken, body: { name: `Leavers ${randomUUID().slice(0, 4)}` } });
      await t.call('POST', `/api/org/teams/${team.json.team.id}/members`, { token: acme.ownerToken, body: { userId: person.userId } });
      const byMember = await t.call('DELETE', `/api/org/${acme.orgId}/members/${person.userId}`, { token: member.token });
      expect(byMember.status).to.equal(403);
      const r = await t.call('DELETE', `/api/org/${acme.orgId}/members/${person.userId}`, { token: admin.token });
      expect(r.status, r.text).to.equal(200);
      expect(r.json).to.deep.equal({ userId: person.userId, removed: true });
      expect(await roleOf(acme, person.userId)).to.equal(undefined);
      const teamMembers = await t.call('GET', `/api/org/teams/${team.json.team.id}/members`, { token: acme.ownerToken });
      expect(teamMembers.json.members).to.deep.equal([]);
      const after = await t.call('GET', '/api/cli/whoami', { token: person.token });
      expect(after.status).to.equal(401);
      const twice = await t.call('DELETE', `/api/org/${acme.orgId}/members/${person.userId}`, { token: admin.token });
      expect(twice.status).to.equal(404);
    });
  });

  describe('API keys and registration tokens', () => {
    it('lists keys without their secret, revoked ones marked, to admins only', async () => {
      const made = await t.call('POST', `/api/org/${acme.orgId}/keys`, { token: admin.token, body: { name: 'ci' } });
      expect(made.status).to.equal(201);
      await t.call('DELETE', `/api/org/${acme.orgId}/keys/${made.json.id}`, { token: admin.token });
      const r = await t.call('GET', `/api/org/${acme.orgId}/keys`, { token: admin.token });
      expect(r.status, r.text).to.equal(200);
      const ci = r.json.keys.find((k: { id: string }) => k.id === made.json.id);
      expect(ci).to.include({ name: 'ci', prefix: made.json.prefix });
      expect(ci.revokedAt).to.be.a('string');
      expect(r.text).not.to.contain(made.json.fullKey);
      expect(r.text).not.to.contain(acme.apiKey);
      expect(Object.keys(ci)).not.to.include('hash');
      expect(r.json.keys.map((k: { name: string }) => k.name)).to.include('provisioning');
      for (const token of [member.token, viewer.token]) expect((await t.call('GET', `/api/org/${acme.orgId}/keys`, { token })).status).to.equal(403);
      const across = await t.call('GET', `/api/org/${globex.orgId}/keys`, { token: acme.ownerToken });
      expect(across.status).to.equal(403);
    });

    it('lists registration tokens without their secret, to admins only', async () => {
      const made = await t.call('POST', `/api/org/${acme.orgId}/registration-tokens`, { token: admin.token, body: { name: 'build farm' } });
      expect(made.status).to.equal(201);
      const r = await t.call('GET', `/api/org/${acme.orgId}/registration-tokens`, { token: admin.token });
      expect(r.status, r.text).to.equal(200);
      expect(r.json.registrationTokens[0]).to.deep.include({ id: made.json.id, name: 'build farm', projects: [], revokedAt: null });
      expect(r.text).not.to.contain(made.json.registrationToken);
      expect((await t.call('GET', `/api/org/${acme.orgId}/registration-tokens`, { token: member.token })).status).to.equal(403);
      expect((await t.call('GET', `/api/org/${globex.orgId}/registration-tokens`, { token: acme.ownerToken })).status).to.equal(403);
      const globexTokens = await t.call('GET', `/api/org/${globex.orgId}/registration-tokens`, { token: globex.ownerToken });
      expect(globexTokens.json.registrationTokens.map((x: { id: string }) => x.id)).not.to.include(made.json.id);
    });
  });

  describe('teams', () => {
    it('lists the org\'s teams with their size, and takes a member off one', async () => {
      const team = await t.call('POST', '/api/org/teams', { token: admin.token, body: { name: 'Platform' } });
      const teamId = team.json.team.id as string;
      await t.call('POST', `/api/org/teams/${teamId}/members`, { token: admin.token, body: { userId: member.userId } });
      const globexTeam = await t.call('POST', '/api/org/teams', { token: globex.ownerToken, body: { name: 'Hidden' } });
      const list = await t.call('GET', '/api/org/teams', { token: viewer.token });
      expect(list.status, list.text).to.equal(200);
      expect(list.json.teams.find((x: { id: string }) => x.id === teamId)).to.include({ name: 'Platform', memberCount: 1 });
      expect(list.json.teams.map((x: { id: string }) => x.id)).not.to.include(globexTeam.json.team.id);

      const byMember = await t.call('DELETE', `/api/org/teams/${teamId}/members/${member.userId}`, { token: member.token });
      expect(byMember.status).to.equal(403);
      const across = await t.call('DELETE', `/api/org/teams/${globexTeam.json.team.id}/members/${globex.ownerId}`, { token: acme.ownerToken });
      expect(across.status).to.equal(404);
      const r = await t.call('DELETE', `/api/org/teams/${teamId}/members/${member.userId}`, { token: admin.token });
      expect(r.status, r.text).to.equal(200);
      expect(r.json).to.deep.equal({ teamId, userId: member.userId, removed: true });
      expect((await t.call('DELETE', `/api/org/teams/${teamId}/members/${member.userId}`, { token: admin.token })).status).to.equal(404);
      expect((await t.call('DELETE', `/api/org/teams/${teamId}/members/nope`, { token: admin.token })).status).to.equal(404);
    });
  });

  describe('integrations', () => {
    it('lists each provider with the org\'s connection and webhook, and forgets an OAuth connection on request', async () => {
      const secret = await t.call('PUT', `/api/org/${acme.orgId}/integrations/github`, { token: acme.ownerToken, body: { signingSecret: 'whsec-github-1234567890' } });
      expect(secret.status, secret.text).to.equal(200);
      const at = new Date();
      for (const org of [acme, globex]) {
        await upsertOAuthConnection(t.node.deps.db, { orgId: org.orgId, provider: 'linear', sealedTokens: 'sealed', scope: 'read', expiresAt: null, connectedBy: org.ownerId, at });
      }
      const r = await t.call('GET', `/api/org/${acme.orgId}/integrations`, { token: viewer.token });
      expect(r.status, r.text).to.equal(200);
      expect(r.json.oauth.map((o: { provider: string }) => o.provider)).to.deep.equal(['linear', 'github', 'sentry']);
      expect(r.json.oauth[0].connection).to.include({ status: 'connected', scope: 'read', connectedBy: acme.ownerId });
      expect(r.json.oauth[1].connection).to.equal(null);
      expect(r.json.webhooks.find((w: { provider: string }) => w.provider === 'github')).to.include({ connected: true, webhookUrl: `/api/webhooks/ingest/github?org=${acme.orgId}` });
      expect(r.json.webhooks.find((w: { provider: string }) => w.provider === 'linear')).to.include({ connected: false });
      expect(r.text).not.to.contain('sealed').and.not.to.contain('whsec');
      expect((await t.call('GET', `/api/org/${globex.orgId}/integrations`, { token: acme.ownerToken })).status).to.equal(403);

      for (const token of [member.token, viewer.token]) {
        expect((await t.call('DELETE', `/api/integrations/linear/oauth`, { token })).status).to.equal(403);
      }
      expect((await t.call('DELETE', `/api/integrations/gitlab/oauth`, { token: admin.token })).status).to.equal(404);
      expect((await t.call('DELETE', `/api/integrations/github/oauth`, { token: admin.token })).status).to.equal(404);
      const gone = await t.call('DELETE', `/api/integrations/linear/oauth`, { token: admin.token });
      expect(gone.status, gone.text).to.equal(200);
      expect(gone.json).to.deep.equal({ provider: 'linear', connected: false });
      const after = await t.call('GET', `/api/org/${acme.orgId}/integrations`, { token: admin.token });
      expect(after.json.oauth[0].connection).to.equal(null);
      const globexAfter = await t.call('GET', `/api/org/${globex.orgId}/integrations`, { token: globex.ownerToken });
      expect(globexAfter.json.oauth[0].connection).to.include({ status: 'connected' });
    });
  });
});
