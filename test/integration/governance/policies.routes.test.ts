// Invariant: stored Cedar policies round-trip through the HTTP API with every spec 2.4 field; each change of the
// Cedar text appends an immutable version (newest first) with who and why; invalid Cedar is a 400 naming Cedar's
// message and position; only humans reach the routes (API keys, machine and runtime tokens get 403), only
// admins/owners manage, and another org's policy is 404. Active policies join authorization: a forbid denies, an
// erroring statement denies even where the defaults permit, and the decision names the stored policy.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from '../../support/node.js';
import { addUser, nonHumanTokens, provisionOrg, type ProvisionedOrg, governanceEngineSets } from './governance-fixtures.js';
import type { Principal } from '../../../actors/services/identity/principal.js';

const permitRead = 'permit (principal is Troupe::User, action == Troupe::Action::"read", resource is Troupe::Incident)\nwhen { principal.orgId == resource.orgId };';
const forbidViewerReads = '@id("no-viewer-incidents")\nforbid (principal is Troupe::User, action == Troupe::Action::"read", resource is Troupe::Incident)\nwhen { principal.orgRole == "viewer" };';

for (const { set, skip } of governanceEngineSets) describe(`governance: policies over HTTP (${set} engines)`, function () {
  if (skip) return;
  this.timeout(30_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  const create = (token: string, body: Record<string, unknown>) => t.inject('POST', '/api/policies', { token, body });

  it('creates, versions on each Cedar change, archives, and reads back newest first with every field', async () => {
    const created = await create(org.ownerToken, {
      name: 'Incident readers', description: 'who reads incidents', cedarPolicy: permitRead, regulatoryTags: ['SOC2'],
      metadata: { ticket: 'SEC-1' }, status: 'draft',
    });
    expect(created.status, created.text).to.equal(201);
    const p = created.json.policy;
    expect(p).to.include({ workspaceId: org.orgId, name: 'Incident readers', scope: 'workspace', scopeId: org.orgId, status: 'draft', version: 1, createdBy: org.ownerId, archivedAt: null });
    expect(p.regulatoryTags).to.deep.equal(['SOC2']);
    expect(p.metadata).to.deep.equal({ ticket: 'SEC-1' });
    for (const field of ['id', 'description', 'cedarPolicy', 'createdAt', 'updatedAt']) expect(p[field], field).to.be.a('string');

    const renamed = await t.inject('PATCH', `/api/policies/${p.id}`, { token: org.ownerToken, body: { name: 'Readers' } });
    expect(renamed.status, renamed.text).to.equal(200);
    expect(renamed.json.policy.version, 'a rename is not a new version').to.equal(1);

    const changed = await t.inject('PATCH', `/api/policies/${p.id}`, {
      token: org.ownerToken, body: { cedarPolicy: `${permitRead}\n${forbidViewerReads}`, changeReason: 'viewers lose incidents' },
    });
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.json.policy.version).to.equal(2);

    const read = await t.inject('GET', `/api/policies/${p.id}`, { token: org.ownerToken });
    expect(read.status, read.text).to.equal(200);
    expect(read.json.policy.name).to.equal('Readers');
    expect(read.json.versions.map((v: { version: number }) => v.version)).to.deep.equal([2, 1]);
    expect(read.json.versions[0]).to.include({ policyId: p.id, changedBy: org.ownerId, changeReason: 'viewers lose incidents' });
    expect(read.json.versions[1].cedarPolicy).to.equal(permitRead);

    const archived = await t.inject('PATCH', `/api/policies/${p.id}`, { token: org.ownerToken, body: { status: 'archived' } });
    expect(archived.json.policy.status).to.equal('archived');
    expect(archived.json.policy.archivedAt).to.be.a('string');
    const again = await t.inject('PATCH', `/api/policies/${p.id}`, { token: org.ownerToken, body: { name: 'x' } });
    expect(again.status, 'an archived policy is final').to.equal(409);
  });

  it('lists by status and scope, and treats another workspace as absent', async () => {
    const a = await create(org.ownerToken, { name: 'ws', cedarPolicy: permitRead });
    const b = await create(org.ownerToken, { name: 'proj', cedarPolicy: permitRead, scope: 'project', scopeId: org.projectId, status: 'draft' });
    expect(a.status).to.equal(201);
    expect(b.status, b.text).to.equal(201);
    const drafts = await t.inject('GET', `/api/policies?workspaceId=${org.orgId}&status=draft&scope=project`, { token: org.ownerToken });
    expect(drafts.status, drafts.text).to.equal(200);
    expect(drafts.json.policies.map((x: { id: string }) => x.id)).to.deep.equal([b.json.policy.id]);
    const foreign = await t.inject('GET', `/api/policies?workspaceId=${other.orgId}`, { token: org.ownerToken });
    expect(foreign.status).to.equal(404);
    const otherList = await t.inject('GET', '/api/policies', { token: other.ownerToken });
    expect(otherList.json.policies).to.deep.equal([]);
  });

  it('answers 404 for another org\'s policy on read and update', async () => {
    const mine = await create(org.ownerToken, { name: 'mine', cedarPolicy: permitRead });
    const id = mine.json.policy.id as string;
    expect((await t.inject('GET', `/api/policies/${id}`, { token: other.ownerToken })).status).to.equal(404);
    expect((await t.inject('PATCH', `/api/policies/${id}`, { token: other.ownerToken, body: { name: 'stolen' } })).status).to.equal(404);
    expect((await t.inject('GET', `/api/policies/${randomUUID()}`, { token: org.ownerToken })).status).to.equal(404);
    expect((await t.inject('GET', '/api/policies/not-a-uuid', { token: org.ownerToken })).status).to.equal(404);
  });

  it('refuses invalid Cedar with its message and position, and text that breaks the schema', async () => {
    const syntax = await create(org.ownerToken, { name: 'bad', cedarPolicy: 'permit (principal, action, resource)\nwhen { principal.orgId == };' });
    expect(syntax.status).to.equal(400);
    expect(syntax.json.error).to.match(/cedarPolicy: .*unexpected token.* at line 2, column \d+/);
    const schema = await create(org.ownerToken, { name: 'bad', cedarPolicy: 'forbid (principal, action, resource) when { resource.nope == 1 };' });
    expect(schema.status).to.equal(400);
    expect(schema.json.error).to.match(/cedarPolicy: .*nope/);
    const empty = await create(org.ownerToken, { name: 'bad', cedarPolicy: '// nothing here' });
    expect(empty.status).to.equal(400);
  });

  it('takes only humans, and only admins and owners manage', async () => {
    const tokens = await nonHumanTokens(t, org);
    for (const [kind, token] of Object.entries(tokens)) {
      expect((await create(token, { name: 'x', cedarPolicy: permitRead })).status, kind).to.equal(403);
      expect((await t.inject('GET', '/api/policies', { token })).status, kind).to.equal(403);
    }
    expect((await t.inject('GET', '/api/policies')).status).to.equal(401);
    const member = await addUser(t, org.orgId, 'member');
    expect((await create(member.token, { name: 'x', cedarPolicy: permitRead })).status).to.equal(403);
    expect((await t.inject('GET', '/api/policies', { token: member.token })).status, 'members read').to.equal(200);
    const admin = await addUser(t, org.orgId, 'admin');
    expect((await create(admin.token, { name: 'x', cedarPolicy: permitRead })).status).to.equal(201);
  });

  it('survives hostile bodies without a 5xx', async () => {
    const bodies: unknown[] = [
      { name: 'x' }, { name: '', cedarPolicy: permitRead }, { name: 'x', cedarPolicy: 'x'.repeat(70_000) },
      { name: 'x', cedarPolicy: permitRead, scope: 'project' }, { name: 'x', cedarPolicy: permitRead, scope: 'project', scopeId: other.projectId },
      { name: 'x', cedarPolicy: permitRead, workspaceId: other.orgId }, { name: 'x', cedarPolicy: permitRead, extra: 1 },
      { name: 'x', cedarPolicy: '@id("a") @id("b") permit (principal, action, resource);' }, [], 'text',
      { name: 'x', cedarPolicy: permitRead, metadata: 'no' },
    ];
    for (const body of bodies) {
      const r = await create(org.ownerToken, body as Record<string, unknown>);
      expect(r.status, JSON.stringify(body).slice(0, 80)).to.be.within(400, 499);
    }
    const bad = await t.inject('POST', '/api/policies', { token: org.ownerToken, rawBody: '{"name":', headers: { 'content-type': 'application/json' } });
    expect(bad.status).to.equal(400);
    const patch = await t.inject('PATCH', `/api/policies/${randomUUID()}`, { token: org.ownerToken, body: {} });
    expect(patch.status).to.be.within(400, 499);
  });

  it('keeps the owner able to read and manage policies after an admin forbids owners everything, and audits each break-glass (issue 16)', async () => {
    const locked = await provisionOrg(t);
    const admin = await addUser(t, locked.orgId, 'admin');
    const lockout = '@id("no-owners")\nforbid (principal is Troupe::User, action, resource) when { principal.orgRole == "owner" };';
    const created = await create(admin.token, { name: 'lock owners out', cedarPolicy: lockout });
    expect(created.status, created.text).to.equal(201);
    const id = created.json.policy.id as string;

    expect((await t.inject('GET', '/api/audit?limit=5', { token: locked.ownerToken })).status, 'the forbid holds elsewhere').to.equal(403);
    expect((await t.inject('GET', '/api/incidents', { token: locked.ownerToken })).status).to.equal(403);
    const list = await t.inject('GET', '/api/policies', { token: locked.ownerToken });
    expect(list.status, list.text).to.equal(200);
    expect(list.json.policies.map((p: { id: string }) => p.id)).to.include(id);
    expect((await t.inject('GET', `/api/policies/${id}`, { token: locked.ownerToken })).status).to.equal(200);
    const undone = await t.inject('PATCH', `/api/policies/${id}`, { token: locked.ownerToken, body: { status: 'archived', changeReason: 'break glass' } });
    expect(undone.status, undone.text).to.equal(200);
    expect(undone.json.policy.status).to.equal('archived');

    const audit = await t.inject('GET', '/api/audit?limit=50', { token: locked.ownerToken });
    expect(audit.status, 'full access again once the forbid is archived').to.equal(200);
    const breakGlass = audit.json.entries.filter((e: { type: string }) => e.type === 'authz.break_glass');
    expect(breakGlass.map((e: { payload: { action: string } }) => e.payload.action).sort()).to.deep.equal(['manage-policies', 'read', 'read']);
    for (const entry of breakGlass) {
      expect(entry.actor).to.equal(locked.ownerId);
      expect(entry.payload.rule).to.equal('platform.owner-keeps-policies');
      expect(entry.payload.refusedBy).to.deep.equal([`org.policy/${id}/v1#0`]);
    }
    const verified = await t.inject('GET', '/api/audit/verify', { token: locked.ownerToken });
    expect(verified.json.valid).to.equal(true);
    // The platform rule is the owner's alone: the same forbid on admins leaves them without policies.
    const adminLockout = '@id("no-admins")\nforbid (principal is Troupe::User, action, resource) when { principal.orgRole == "admin" };';
    expect((await create(locked.ownerToken, { name: 'lock admins out', cedarPolicy: adminLockout })).status).to.equal(201);
    expect((await t.inject('GET', '/api/policies', { token: admin.token })).status).to.equal(403);
  });

  describe('enforcement', () => {
    let enforced: ProvisionedOrg;
    before(async () => { enforced = await provisionOrg(t); });

    const check = (principal: Principal, orgId: string) =>
      t.node.deps.authz.check(principal, 'read', { type: 'Incident', id: randomUUID(), orgId });

    it('joins active policies to every decision, names them, and drops them when archived', async () => {
      const viewer = await addUser(t, enforced.orgId, 'viewer');
      const principal: Principal = { kind: 'user', userId: viewer.userId, orgId: enforced.orgId, orgRole: 'viewer', via: 'token' };
      expect((await check(principal, enforced.orgId)).allowed).to.equal(true);
      expect((await t.inject('GET', '/api/incidents', { token: viewer.token })).status).to.equal(200);

      const created = await create(enforced.ownerToken, { name: 'no viewers', cedarPolicy: forbidViewerReads });
      expect(created.status, created.text).to.equal(201);
      const id = created.json.policy.id as string;
      const denied = await check(principal, enforced.orgId);
      expect(denied.allowed).to.equal(false);
      expect(denied.determiningPolicies).to.deep.equal([`org.policy/${id}/v1#0`]);
      expect((await t.inject('GET', '/api/incidents', { token: viewer.token })).status, 'over HTTP too').to.equal(403);

      await t.inject('PATCH', `/api/policies/${id}`, { token: enforced.ownerToken, body: { status: 'archived' } });
      expect((await check(principal, enforced.orgId)).allowed).to.equal(true);
    });

    it('denies when a statement errors during evaluation, even where the defaults permit', async () => {
      const owner: Principal = { kind: 'user', userId: enforced.ownerId, orgId: enforced.orgId, orgRole: 'owner', via: 'token' };
      // Valid against the schema, but its arithmetic overflows at evaluation: Cedar skips it unless we look.
      const erroring = 'forbid (principal is Troupe::User, action == Troupe::Action::"read", resource is Troupe::Incident)\nwhen { principal.orgRole == "owner" && 9223372036854775807 + 1 > 0 };';
      const created = await create(enforced.ownerToken, { name: 'overflow', cedarPolicy: erroring });
      expect(created.status, created.text).to.equal(201);
      const result = await check(owner, enforced.orgId);
      expect(result.allowed).to.equal(false);
      expect(result.errors.join(' ')).to.contain(`org.policy/${created.json.policy.id}/v1#0`);
      // Another org is untouched by this org's policies.
      const outsider: Principal = { kind: 'user', userId: other.ownerId, orgId: other.orgId, orgRole: 'owner', via: 'token' };
      expect((await check(outsider, other.orgId)).allowed).to.equal(true);
      await t.inject('PATCH', `/api/policies/${created.json.policy.id}`, { token: enforced.ownerToken, body: { status: 'archived' } });
    });
  });
});
