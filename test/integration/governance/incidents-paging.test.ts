// Invariant (spec 4.8, "limit and offset paging"): the incident list pages with `limit` and `offset` over one
// order (newest first): consecutive pages hold every incident once, a page past the end is empty, `total` counts
// the whole filtered list on every page, filters apply before paging, and a limit or offset out of range is a 400
// naming the parameter. Another org's incidents are never counted or listed.
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from '../../support/node.js';
import { secretKey, sign } from '../../../actors/services/governance/standard-webhooks.js';
import { provisionOrg, type ProvisionedOrg, governanceEngineSets } from './governance-fixtures.js';

const INCIDENTS = 7;

for (const { set, skip } of governanceEngineSets) describe(`governance: incident list paging (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;
  /** The whole list as one unpaged request gives it, newest first. */
  let all: string[];

  async function connect(o: ProvisionedOrg): Promise<string> {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const put = await t.call('PUT', `/api/org/${o.orgId}/integrations/incident-io`, { token: o.ownerToken, body: { signingSecret: secret } });
    expect(put.status, put.text).to.equal(200);
    return secret;
  }

  async function reportIncident(o: ProvisionedOrg, secret: string, severity: string): Promise<void> {
    const body = JSON.stringify({ event_type: 'incident.created', data: { id: `inc-${randomUUID()}`, name: `Outage ${severity}`, severity: { name: severity }, status: 'triage' } });
    const id = `msg_${randomUUID()}`;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const res = await t.call('POST', `/api/webhooks/ingest/incident-io?org=${o.orgId}`, {
      rawBody: body,
      headers: { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': sign(secretKey(secret)!, id, timestamp, body), 'content-type': 'application/json' },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.json.created).to.equal(true);
  }

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
    const secret = await connect(org);
    for (let i = 0; i < INCIDENTS; i += 1) await reportIncident(org, secret, i % 2 === 0 ? 'critical' : 'minor');
    await reportIncident(other, await connect(other), 'critical');
    const whole = await list('limit=200');
    expect(whole.incidents).to.have.length(INCIDENTS);
    all = whole.incidents.map((i: { id: string }) => i.id);
  });
  after(async () => { await t?.close(); });

  const list = async (query: string, token = org.ownerToken) => {
    const res = await t.call('GET', `/api/incidents?${query}`, { token });
    expect(res.status, res.text).to.equal(200);
    return res.json;
  };

  it('walks the list in pages of limit from offset, each incident once, newest first', async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < INCIDENTS; offset += 3) {
      const page = await list(`limit=3&offset=${offset}`);
      expect(page).to.include({ limit: 3, offset, total: INCIDENTS });
      expect(page.incidents).to.have.length(Math.min(3, INCIDENTS - offset));
      seen.push(...page.incidents.map((i: { id: string }) => i.id));
    }
    expect(seen).to.deep.equal(all);
    const created = (await list('limit=200')).incidents.map((i: { createdAt: string }) => i.createdAt);
    expect(created).to.deep.equal([...created].sort().reverse());
    const past = await list(`limit=3&offset=${INCIDENTS}`);
    expect(past).to.include({ total: INCIDENTS });
    expect(past.incidents).to.deep.equal([]);
  });

  it('pages the filtered list, and counts only it', async () => {
    const critical = (await list('severity=critical&limit=200')).incidents.map((i: { id: string }) => i.id);
    expect(critical).to.have.length(Math.ceil(INCIDENTS / 2));
    const second = await list('severity=critical&limit=2&offset=2');
    expect(second.total).to.equal(critical.length);
    expect(second.incidents.map((i: { id: string }) => i.id)).to.deep.equal(critical.slice(2, 4));
  });

  it('refuses a limit or offset out of range with 400 naming it', async () => {
    for (const query of ['limit=0', 'limit=201', 'limit=two', 'offset=-1', 'offset=1.5']) {
      const res = await t.call('GET', `/api/incidents?${query}`, { token: org.ownerToken });
      expect(res.status, query).to.equal(400);
      expect(res.json.code, query).to.equal('HTTP_BAD_QUERY');
      expect(res.json.error, query).to.contain(query.split('=')[0]);
    }
  });

  it("never counts or lists another org's incidents", async () => {
    const theirs = await list('limit=200', other.ownerToken);
    expect(theirs.total).to.equal(1);
    expect(theirs.incidents.map((i: { id: string }) => i.id)).to.not.include.members(all);
    expect((await list('limit=1&offset=1', other.ownerToken)).incidents).to.deep.equal([]);
  });
});
