// Invariant (spec 4.8, "project-scoped gates filtered by caller access"): the approval-gate list shows a caller only
// the gates of projects the caller may read. A member whom an org policy keeps out of one project lists the other
// project's gates, oldest first, and none of that project's (neither in the full list, by status, nor among the
// gates to decide); an owner, who reads every project, lists both; another org lists none.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from '../../support/node.js';
import { insertProject } from '../../../storage/identity/orgs.js';
import { addUser, provisionOrg, type ProvisionedOrg, governanceEngineSets } from './governance-fixtures.js';

const keepMembersOut = '@id("members-kept-out-of-restricted")\n'
  + 'forbid (principal is Troupe::User, action == Troupe::Action::"read", resource)\nwhen { principal.orgRole == "member" };';

for (const { set, skip } of governanceEngineSets) describe(`governance: approval gates listed per project access (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;
  let member: { userId: string; token: string };
  let restricted: string;

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
    member = await addUser(t, org.orgId, 'member');
    // Projects have no create route yet; the org's second project is written as provisioning writes the first.
    restricted = randomUUID();
    await insertProject(t.node.deps.db, { id: restricted, orgId: org.orgId, name: 'Restricted', slug: `restricted-${restricted.slice(0, 8)}` });
  });
  after(async () => { await t?.close(); });

  const openGate = async (projectId: string, title: string): Promise<string> => {
    const res = await t.call('POST', '/api/approval-gates', { token: org.ownerToken, body: { projectId, title, issue: 'ENG-42' } });
    expect(res.status, res.text).to.equal(201);
    return res.json.gate.id as string;
  };
  const listed = async (token: string, query = 'issue=ENG-42'): Promise<string[]> => {
    const res = await t.call('GET', `/api/approval-gates?${query}`, { token });
    expect(res.status, res.text).to.equal(200);
    return res.json.gates.map((g: { id: string }) => g.id);
  };

  it('omits the gates of a project the caller may not read, and only those', async () => {
    const open = await openGate(org.projectId, 'Ship the default project?');
    const hidden = await openGate(restricted, 'Ship the restricted project?');
    const openLater = await openGate(org.projectId, 'And again?');
    expect(await listed(member.token), 'before any restriction').to.deep.equal([open, hidden, openLater]);

    const policy = await t.call('POST', '/api/policies', {
      token: org.ownerToken, body: { name: 'Restricted is not for members', cedarPolicy: keepMembersOut, scope: 'project', scopeId: restricted },
    });
    expect(policy.status, policy.text).to.equal(201);

    expect(await listed(member.token)).to.deep.equal([open, openLater]);
    expect(await listed(member.token, 'issue=ENG-42&status=pending')).to.deep.equal([open, openLater]);
    expect(await listed(member.token, 'issue=ENG-42&for=me')).to.deep.equal([open, openLater]);
    expect(await listed(org.ownerToken), 'the owner reads every project').to.deep.equal([open, hidden, openLater]);
    expect(await listed(other.ownerToken), 'another org').to.deep.equal([]);
  });
});
