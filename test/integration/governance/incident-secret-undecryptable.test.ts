// Invariant (spec 7: 401 for an incident webhook whose signature state is "undecryptable"): when the org's stored
// incident.io signing secret cannot be decrypted (here: sealed under another master key, as after a key mix-up), a
// delivery signed with that very secret is refused 401 with {error, code}, with or without `?org=`, and creates
// nothing; once the secret is stored again, the same kind of delivery is accepted.
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from '../../support/node.js';
import { secretKey, sign } from '../../../actors/services/governance/standard-webhooks.js';
import { sealContext } from '../../../actors/services/governance/incident-webhook.js';
import { Secrets } from '../../../ops/kernel/secrets.js';
import { generateMasterKey } from '../../../ops/secrets.js';
import { provisionOrg, type ProvisionedOrg, governanceEngineSets } from './governance-fixtures.js';

const PATH = '/api/webhooks/ingest/incident-io';

for (const { set, skip } of governanceEngineSets) describe(`governance: an undecryptable incident.io secret answers 401 (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  const secret = `whsec_${randomBytes(24).toString('base64')}`;

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  const connect = () => t.call('PUT', `/api/org/${org.orgId}/integrations/incident-io`, { token: org.ownerToken, body: { signingSecret: secret } });
  const deliver = (query: string) => {
    const body = JSON.stringify({ event_type: 'incident.created', data: { id: `inc-${randomUUID()}`, name: 'Checkout down' } });
    const id = `msg_${randomUUID()}`;
    const timestamp = String(Math.floor(Date.now() / 1000));
    return t.call('POST', `${PATH}${query}`, {
      rawBody: body,
      headers: { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': sign(secretKey(secret)!, id, timestamp, body), 'content-type': 'application/json' },
    });
  };
  const incidents = async () => (await t.call('GET', '/api/incidents', { token: org.ownerToken })).json.incidents as unknown[];

  it('refuses a correctly signed delivery with 401 while the stored secret cannot be opened, and accepts once it is stored again', async () => {
    expect((await connect()).status).to.equal(200);
    const foreignKey = Secrets.fromBase64(generateMasterKey());
    const updated = await t.node.deps.db('incident_io_connections').where({ org_id: org.orgId })
      .update({ sealed_secret: foreignKey.seal(secret, sealContext(org.orgId)) });
    expect(updated).to.equal(1);

    for (const query of [`?org=${org.orgId}`, '']) {
      const refused = await deliver(query);
      expect(refused.status, `${query || 'no ?org='}: ${refused.text}`).to.equal(401);
      expect(refused.json.error).to.be.a('string');
      expect(refused.json.code).to.be.a('string');
      expect(refused.text).to.not.contain(secret.slice(6, 20));
    }
    expect(await incidents(), 'nothing created').to.deep.equal([]);

    expect((await connect()).status).to.equal(200);
    const accepted = await deliver(`?org=${org.orgId}`);
    expect(accepted.status, accepted.text).to.equal(200);
    expect(await incidents()).to.have.length(1);
  });
});
