// Invariant (issue 16, Low): the edge refuses JSON that cannot be stored or walked, and numbers that are not numbers,
// with 400 {error, code} before any handler: a lone UTF-16 surrogate in any string or key (Postgres refuses it, which
// was a 500), JSON nested deeper than 64 (a 500 at 10,000), and integer query parameters that are not plain digits
// (`limit=1e309` was Infinity and dropped the SQL LIMIT). Signed webhook bodies get the same checks after their
// signature. Nothing is stored.
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from '../../support/node.js';
import { signatureHeaderFor } from '../../../actors/services/integrations/webhooks/providers.js';
import { MAX_JSON_DEPTH } from '../../../ops/kernel/json-text.js';

describe('edge: JSON text and integer query parameters (issue 16)', function () {
  this.timeout(60_000);
  let t: TestNode;
  let orgId: string; let owner: string;

  before(async () => {
    t = await startTestNode();
    const org = await t.call('POST', '/api/admin/orgs', { token: t.adminToken, body: { name: 'Edge', owner: { email: 'o@edge.test' } } });
    ({ userToken: owner } = org.json);
    orgId = org.json.org.id;
  });
  after(async () => { await t?.close(); });

  const post = (rawBody: string) => t.call('POST', '/api/policies', { token: owner, rawBody, headers: { 'content-type': 'application/json' } });
  const policy = 'permit (principal, action == Troupe::Action::"read", resource is Troupe::Incident) when { principal.orgId == resource.orgId };';

  it('refuses a lone surrogate in a value or a key with 400 HTTP_BAD_JSON, and stores nothing', async () => {
    for (const raw of [
      `{"name":"\\ud800","cedarPolicy":${JSON.stringify(policy)}}`,
      `{"name":"x\\udfffy","cedarPolicy":${JSON.stringify(policy)}}`,
      `{"name":"ok","cedarPolicy":${JSON.stringify(policy)},"metadata":{"\\udc00":1}}`,
      `{"name":"ok","cedarPolicy":${JSON.stringify(policy)},"metadata":{"a":["\\ud83d"]}}`,
    ]) {
      const res = await post(raw);
      expect([res.status, res.json?.code], raw).to.deep.equal([400, 'HTTP_BAD_JSON']);
    }
    const paired = await post(`{"name":"\\ud83d\\ude00","cedarPolicy":${JSON.stringify(policy)}}`);
    expect(paired.status, 'a surrogate pair is a character like any other').to.equal(201);
    const list = await t.call('GET', '/api/policies', { token: owner });
    expect(list.json.policies.map((p: { name: string }) => p.name)).to.deep.equal(['😀']);
  });

  it(`refuses JSON nested deeper than ${MAX_JSON_DEPTH} with 400, and 10,000 deep too`, async () => {
    const nested = (depth: number) => `{"name":"deep","cedarPolicy":${JSON.stringify(policy)},"metadata":{"a":${'['.repeat(depth - 2)}1${']'.repeat(depth - 2)}}}`;
    for (const depth of [MAX_JSON_DEPTH + 1, 10_000]) {
      const res = await post(nested(depth));
      expect([res.status, res.json?.code], `depth ${depth}`).to.deep.equal([400, 'HTTP_BAD_JSON']);
    }
    const atLimit = await post(nested(MAX_JSON_DEPTH));
    expect(atLimit.status, atLimit.text).to.equal(201);
  });

  it('refuses integer query parameters that are not plain decimal digits (limit=1e309, 0x10, 1.5, " 7")', async () => {
    for (const path of ['/api/incidents', '/api/policies', '/api/audit', '/api/security/metrics']) {
      for (const value of ['1e309', '0x10', '1.5', '%207', '-0x1', '9999999999999999']) {
        const res = await t.call('GET', `${path}?limit=${value}`, { token: owner });
        expect([res.status, res.json?.code], `${path}?limit=${value}`).to.deep.equal([400, 'HTTP_BAD_QUERY']);
      }
      expect((await t.call('GET', `${path}?limit=5`, { token: owner })).status, path).to.equal(200);
    }
  });

  it('refuses a validly signed webhook body holding a lone surrogate (400), before anything is recorded', async () => {
    const secret = randomBytes(20).toString('hex');
    await t.call('PUT', `/api/org/${orgId}/integrations/vercel`, { token: owner, body: { signingSecret: secret } });
    const body = `{"id":"evt_${randomUUID()}","type":"deployment.error","payload":{"name":"\\ud800"}}`;
    const res = await t.call('POST', `/api/webhooks/ingest/vercel?org=${orgId}`, {
      rawBody: body, headers: { 'content-type': 'application/json', ...signatureHeaderFor('vercel', secret, body) },
    });
    expect([res.status, res.json?.code]).to.deep.equal([400, 'HTTP_BAD_JSON']);
    expect(await t.node.deps.db('provider_webhook_events').where({ org_id: orgId }).count({ n: '*' })).to.deep.equal([{ n: 0 }]);
  });
});
