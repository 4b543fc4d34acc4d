// Invariant (issue 16, rules 2 and 6 of routes.hostile.test.ts): another org's resource is never visible or
// changeable: every credential kind of org A on org B's ids is 404 (403 for an org/project guard or a lesser role),
// no list shows B's data, and B reads its resources back unchanged; a third org's Cedar decisions equal a fresh
// evaluation of its active policies while two other orgs create and archive theirs.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { TestNode } from '../support/node.js';
import type { WalkedOperation } from '../support/openapi-walk.js';
import { readBack, type OrgWorld, type World } from './world.js';
import * as cedar from '../../actors/services/cedar/engine.js';
import { loadDefaultPolicySet, splitPolicies } from '../../actors/services/identity/authorizer.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { enforcementText } from '../../actors/kinds/policy/cedar-text.js';
import { activePolicies } from '../../storage/governance/policies.js';
import { CEDAR_NAMESPACE, cedarSchemaText } from '../../schemas/cedar/index.js';
import { CONCURRENCY, describeWalk, Findings, isErrorBody, isNotServerError, pool, send } from './walk.js';

describeWalk('tenancy', (walk) => {
  const { a, credentialFor, pathFor, sampleInit } = walk;
  let t: TestNode, world: World, operations: WalkedOperation[];
  before(() => ({ t, world, operations } = walk));

  it("never shows or changes org B's resources to org A: every route on B's ids is 404 (403 on org/project guards), and B reads them back unchanged", async () => {
    const findings = new Findings('tenancy');
    const before = await readBack(t, world.b);
    const cases = operations.flatMap((op) => op.pathParams.filter((param) => world.ownsResource(op.template, param, op.method)).map((param) => ({ op, param })));
    // Credentials that may do anything in their own org: for them any refusal other than 404 would be about B's id.
    const strict = new Set(['owner user token', 'admin user token', 'session cookie', 'admin-scope API key']);
    await pool(cases, CONCURRENCY, async ({ op, param }) => {
      // Only B's id for the parameter under test; every other parameter is A's own, so a refusal is about B's id.
      const path = pathFor(op, a(), { [param]: world.segmentFor(op.template, param, world.b) });
      for (const credential of world.a.credentials) {
        if (!op.schemes.includes(credential.scheme)) continue;
        const answer = await send(t.url, op.method, path, { headers: credential.headers, ...sampleInit(op) });
        // A lesser role may be refused for its role before any lookup (403), which says nothing about B's resource.
        const guard = param === 'orgId' || param === 'projectId' || !strict.has(credential.name);
        const refused = (answer.status === 404 || (guard && answer.status === 403)) && isErrorBody(op, answer);
        const leaks = world.b.markers.some((marker) => answer.text.includes(marker));
        findings.check(op, `B's {${param}} by A's ${credential.name}`, `${op.method} ${path}`, answer, refused && !leaks, guard ? '404 or 403, without B data' : '404 without B data');
      }
    });
    const after = await readBack(t, world.b);
    expect(after, "org A's attempts changed org B's resources").to.deep.equal(before);
    findings.finish();
  });

  it("does not list org B's resources to org A on any parameterless GET", async () => {
    const findings = new Findings('tenancy-lists');
    const lists = operations.filter((op) => op.method === 'GET' && op.pathParams.length === 0 && op.schemes.length > 0 && !op.schemes.includes('adminToken') && !op.sse);
    await pool(lists, CONCURRENCY, async (op) => {
      const answer = await send(t.url, 'GET', op.template, { token: credentialFor(op, a()) });
      const leaks = world.b.markers.filter((marker) => answer.text.includes(marker));
      findings.check(op, 'list as A', `GET ${op.template}`, answer, leaks.length === 0 && isNotServerError(op, answer), `no B data (found ${leaks.join(', ')})`);
    });
    findings.finish();
  });

  it('policy churn: org C\'s decisions match a fresh Cedar evaluation while orgs A and B create and archive policies', async () => {
    const c = await buildChurnOrg(t);
    const permitAll = 'permit (principal, action, resource);';
    const forbidViewers = 'forbid (principal is Troupe::User, action, resource) when { principal.orgRole == "viewer" };';
    const checks: [string, string][] = [['manage-keys', 'Org'], ['read', 'Audit'], ['manage-credentials', 'Credential'], ['publish', 'Workflow']];
    const cViewer: Principal = { kind: 'user', userId: c.viewerId, orgId: c.orgId, orgRole: 'viewer', via: 'token' };
    const compare = async (round: number) => {
      const text = enforcementText(await activePolicies(t.node.deps.db, c.orgId, undefined));
      for (const [action, type] of checks) {
        const resource = { type, id: `${type}-${round}`, orgId: c.orgId };
        const got = await t.node.deps.authz.check(cViewer, action, resource);
        expect(got.allowed, `round ${round}: ${action} ${type}`).to.equal(referenceDecision(text, cViewer, action, resource));
      }
      const key = await send(t.url, 'POST', `/api/org/${c.orgId}/keys`, { token: c.viewerToken, body: JSON.stringify({ name: `churn-${round}` }), contentType: 'application/json' });
      expect(key.status, `round ${round}: C's viewer creates an admin key over HTTP`).to.equal(c.grantActive ? 201 : 403);
    };
    const policy = (org: OrgWorld, cedarPolicy: string) =>
      send(t.url, 'POST', '/api/policies', { token: org.ownerToken, body: JSON.stringify({ name: `churn-${randomUUID()}`, cedarPolicy }), contentType: 'application/json' });
    const archive = (token: string, id: string) =>
      send(t.url, 'PATCH', `/api/policies/${id}`, { token, body: JSON.stringify({ status: 'archived' }), contentType: 'application/json' });
    // C grants its viewers everything, then archives the grant; A and B churn through sets of their own meanwhile.
    const grant = await send(t.url, 'POST', '/api/policies', { token: c.ownerToken, body: JSON.stringify({ name: 'grant', cedarPolicy: permitAll }), contentType: 'application/json' });
    expect(grant.status, grant.text).to.equal(201);
    c.grantActive = true;
    await compare(0);
    for (let round = 1; round <= 12; round += 1) {
      const made = await Promise.all([policy(world.a, round % 2 ? permitAll : forbidViewers), policy(world.b, `${permitAll} // ${round}`)]);
      for (const m of made) expect(m.status, m.text).to.equal(201);
      if (round === 3) {
        expect((await archive(c.ownerToken, grant.json.policy.id)).status).to.equal(200);
        c.grantActive = false;
      }
      await Promise.all([archive(a().ownerToken, made[0]!.json.policy.id), archive(world.b.ownerToken, made[1]!.json.policy.id)]);
      await compare(round);
    }
  });
});

interface ChurnOrg { orgId: string; ownerToken: string; viewerToken: string; viewerId: string; grantActive: boolean }

async function buildChurnOrg(t: TestNode): Promise<ChurnOrg> {
  const org = await t.call('POST', '/api/admin/orgs', { token: t.adminToken, body: { name: `churn-${randomUUID()}`, owner: { email: `churn-${randomUUID()}@example.test` } } });
  expect(org.status, org.text).to.equal(201);
  const viewer = await t.call('POST', `/api/admin/orgs/${org.json.org.id}/users`, { token: t.adminToken, body: { email: `v-${randomUUID()}@example.test`, role: 'viewer' } });
  return { orgId: org.json.org.id, ownerToken: org.json.userToken, viewerToken: viewer.json.userToken, viewerId: viewer.json.user.id, grantActive: false };
}

/** Cedar, stateless, on the defaults joined to the org's active text: no slot, no memo (the reference decision). */
function referenceDecision(extra: string, principal: Extract<Principal, { kind: 'user' }>, action: string, resource: { type: string; id: string; orgId: string }): boolean {
  const ns = CEDAR_NAMESPACE;
  const orgParts = extra.trim() === '' ? {} : splitPolicies(extra, 'org.');
  if (typeof orgParts === 'string') return false;
  const answer = cedar.isAuthorized({
    principal: { type: `${ns}::User`, id: principal.userId },
    action: { type: `${ns}::Action`, id: action },
    resource: { type: `${ns}::${resource.type}`, id: resource.id },
    context: {}, schema: cedarSchemaText(), validateRequest: true,
    policies: { staticPolicies: { ...loadDefaultPolicySet().policies, ...orgParts } },
    entities: [
      { uid: { type: `${ns}::User`, id: principal.userId }, attrs: { orgId: principal.orgId, orgRole: principal.orgRole }, parents: [] },
      { uid: { type: `${ns}::${resource.type}`, id: resource.id }, attrs: { orgId: resource.orgId }, parents: [] },
    ],
  });
  return answer.type === 'success' && answer.response.decision === 'allow' && answer.response.diagnostics.errors.length === 0;
}
