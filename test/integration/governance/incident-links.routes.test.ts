// Invariant: the incidents list never hands out a link that is not http(s) (issue 30, finding 8). A signed incident.io
// delivery whose permalink is `javascript:` or `data:` records the incident without the link; an http(s) permalink is
// kept; a bad link stored before this check is not returned either.
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from '../../support/node.js';
import { secretKey, sign } from '../../../actors/services/governance/standard-webhooks.js';
import { provisionOrg, type ProvisionedOrg, governanceEngineSets } from './governance-fixtures.js';

const PATH = '/api/webhooks/ingest/incident-io';

for (const { set, skip } of governanceEngineSets) describe(`governance: incident links are http(s) only (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  const secret = `whsec_${randomBytes(24).toString('base64')}`;

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    const put = await t.inject('PUT', `/api/org/${org.orgId}/integrations/incident-io`, { token: org.ownerToken, body: { signingSecret: secret } });
    expect(put.status, put.text).to.equal(200);
  });
  after(async () => { await t?.close(); });

  async function deliver(data: Record<string, unknown>): Promise<string> {
    const body = JSON.stringify({ event_type: 'incident.created', data });
    const id = `msg_${randomUUID()}`;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers = { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': sign(secretKey(secret)!, id, timestamp, body), 'content-type': 'application/json' };
    const r = await t.inject('POST', `${PATH}?org=${org.orgId}`, { rawBody: body, headers });
    expect(r.status, r.text).to.equal(200);
    return r.json.incidentId as string;
  }
  const listed = async (id: string) => ((await t.inject('GET', '/api/incidents', { token: org.ownerToken })).json.incidents as Array<{ id: string; title: string; url: string | null }>).find((i) => i.id === id);

  it('records the incident without a javascript: or data: link, and keeps an https one', async () => {
    for (const permalink of ['javascript:alert(document.domain)', 'data:text/html,<script>alert(1)</script>']) {
      const id = await deliver({ id: `inc-${randomUUID()}`, name: 'Bad link', permalink });
      expect(await listed(id)).to.include({ title: 'Bad link', url: null });
      const row = await t.node.deps.db('incidents').where({ id }).first('url');
      expect(row.url, 'not stored').to.equal(null);
    }
    const good = await deliver({ id: `inc-${randomUUID()}`, name: 'Good link', permalink: 'https://app.incident.io/acme/incidents/7' });
    expect(await listed(good)).to.include({ url: 'https://app.incident.io/acme/incidents/7' });
  });

  it('does not hand out a bad link stored before the check', async () => {
    const id = await deliver({ id: `inc-${randomUUID()}`, name: 'Old row', permalink: 'https://ok.example/1' });
    await t.node.deps.db('incidents').where({ id }).update({ url: 'javascript:alert(1)' });
    expect(await listed(id)).to.include({ url: null });
  });
});
