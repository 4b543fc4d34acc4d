// Invariant: the incident.io webhook accepts a delivery only when the org its URL names signed it (a URL without one:
// exactly one connected org secret, or failing that the legacy environment secret of the one org the platform admin
// gave it to), within five minutes, once per org;
// every other delivery — unsigned, tampered, stale, non-digit timestamp, replayed, ambiguous, over 1 MiB — is 401
// and changes nothing. Accepted events create, update and resolve the org's incident, which the human-only list shows.
import { expect } from 'chai';
import sinon from 'sinon';
import { randomBytes, randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from '../../support/node.js';
import { secretKey, sign } from '../../../actors/services/governance/standard-webhooks.js';
import { receiveIncidentIoWebhook } from '../../../actors/services/governance/incident-webhook.js';
import { addUser, nonHumanTokens, provisionOrg, type ProvisionedOrg, governanceEngineSets } from './governance-fixtures.js';

const PATH = '/api/webhooks/ingest/incident-io';
const ENV_SECRET = '/api/admin/integrations/incident-io/environment-secret';
const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

function signed(secret: string, body: string | Buffer, opts: { id?: string; timestamp?: string; extraSignatures?: string[] } = {}) {
  const id = opts.id ?? `msg_${randomUUID()}`;
  const timestamp = opts.timestamp ?? String(Math.floor(Date.now() / 1000));
  const signature = [...(opts.extraSignatures ?? []), sign(secretKey(secret)!, id, timestamp, body)].join(' ');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature, 'content-type': 'application/json' };
}

const event = (eventType: string, data: Record<string, unknown>) => JSON.stringify({ event_type: eventType, data });

for (const { set, skip } of governanceEngineSets) describe(`governance: incident.io webhook (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);

  describe('per-org secrets', () => {
    let t: TestNode;
    let org: ProvisionedOrg;
    let other: ProvisionedOrg;
    const secret = newSecret();

    before(async () => {
      t = await startTestNode({ engines: set });
      org = await provisionOrg(t);
      other = await provisionOrg(t);
      const put = await t.inject('PUT', `/api/org/${org.orgId}/integrations/incident-io`, { token: org.ownerToken, body: { signingSecret: secret } });
      expect(put.status, put.text).to.equal(200);
      expect(put.json).to.include({ connected: true, secretSource: 'org' });
    });
    after(async () => { await t?.close(); });

    const deliver = (body: string | Buffer, headers: Record<string, string>) => t.inject('POST', PATH, { rawBody: body, headers });

    it('stores the secret sealed, for admins and owners of that org only', async () => {
      const row = await t.node.deps.db('incident_io_connections').where({ org_id: org.orgId }).first();
      expect(row.sealed_secret).to.be.a('string').and.not.include(secret.slice(6, 20));
      const member = await addUser(t, org.orgId, 'member');
      expect((await t.inject('PUT', `/api/org/${org.orgId}/integrations/incident-io`, { token: member.token, body: { signingSecret: newSecret() } })).status).to.equal(403);
      expect((await t.inject('PUT', `/api/org/${org.orgId}/integrations/incident-io`, { token: other.ownerToken, body: { signingSecret: newSecret() } })).status).to.equal(404);
      expect((await t.inject('PUT', `/api/org/${org.orgId}/integrations/incident-io`, { token: org.apiKey, body: { signingSecret: newSecret() } })).status).to.equal(403);
      expect((await t.inject('PUT', `/api/org/${org.orgId}/integrations/incident-io`, { token: org.ownerToken, body: { signingSecret: 'whsec_!!' } })).status).to.equal(400);
    });

    it('creates, updates and resolves an incident from signed events, each delivery once', async () => {
      const externalId = `inc-${randomUUID()}`;
      const createdBody = event('incident.created', { id: externalId, name: 'DB down', severity: { name: 'critical' }, status: 'triage' });
      const createdHeaders = signed(secret, createdBody);
      const created = await deliver(createdBody, createdHeaders);
      expect(created.status, created.text).to.equal(200);
      expect(created.json).to.include({ ok: true, created: true, updated: false, resolved: false, event_type: 'incident.created' });
      const incidentId = created.json.incidentId as string;

      const replay = await deliver(createdBody, createdHeaders);
      expect(replay.status, 'a repeated webhook-id').to.equal(401);

      const updatedBody = event('incident.updated', { id: externalId, status: 'fixing' });
      const updated = await deliver(updatedBody, signed(secret, updatedBody));
      expect(updated.json).to.include({ ok: true, created: false, updated: true, resolved: false, incidentId });

      const resolvedBody = event('incident.resolved', { id: externalId });
      const resolved = await deliver(resolvedBody, signed(secret, resolvedBody));
      expect(resolved.json).to.include({ ok: true, resolved: true, incidentId });

      const list = await t.inject('GET', '/api/incidents?status=resolved,closed&severity=critical&source=incident-io', { token: org.ownerToken });
      expect(list.status, list.text).to.equal(200);
      expect(list.json.incidents.map((i: { id: string }) => i.id)).to.deep.equal([incidentId]);
      expect(list.json.incidents[0]).to.include({ title: 'DB down', status: 'resolved', externalId });
      const elsewhere = await t.inject('GET', '/api/incidents', { token: other.ownerToken });
      expect(elsewhere.json.incidents).to.deep.equal([]);
    });

    it('maps incident.io\'s own event names and skips unknown types', async () => {
      const externalId = `01H${randomUUID().slice(0, 8)}`;
      const name = 'public_incident.incident_created_v2';
      const body = JSON.stringify({ event_type: name, [name]: { id: externalId, name: 'Checkout errors', severity: { name: 'Minor' }, incident_status: { category: 'triage', name: 'Triage' } } });
      const created = await deliver(body, signed(secret, body));
      expect(created.json).to.include({ ok: true, created: true, event_type: name });
      const statusName = 'public_incident.incident_status_updated_v2';
      const statusBody = JSON.stringify({ event_type: statusName, [statusName]: { incident: { id: externalId }, new_status: { category: 'closed', name: 'Closed' } } });
      const closed = await deliver(statusBody, signed(secret, statusBody));
      expect(closed.json).to.include({ ok: true, resolved: true, incidentId: created.json.incidentId });
      const other = event('incident.comment_added', { id: 'x' });
      const skipped = await deliver(other, signed(secret, other));
      expect(skipped.status).to.equal(200);
      expect(skipped.json).to.include({ ok: true, skipped: true });
    });

    it('answers 401 to every verification failure, and accepts one good signature among several', async () => {
      const body = event('incident.created', { id: `inc-${randomUUID()}` });
      const good = signed(secret, body);
      expect((await deliver(body, {})).status, 'no headers').to.equal(401);
      expect((await deliver(body.replace('created', 'resolved'), good)).status, 'tampered body').to.equal(401);
      expect((await deliver(body, { ...good, 'webhook-timestamp': `${good['webhook-timestamp']}a` })).status, 'non-digit timestamp').to.equal(401);
      expect((await deliver(body, signed(newSecret(), body))).status, 'unknown secret').to.equal(401);
      const now = Math.floor(Date.now() / 1000);
      expect((await deliver(body, signed(secret, body, { timestamp: String(now - 310) }))).status, 'stale').to.equal(401);
      expect((await deliver(body, signed(secret, body, { timestamp: String(now + 310) }))).status, 'future').to.equal(401);
      expect((await deliver(body, signed(secret, body, { timestamp: String(now - 290) }))).status, 'inside the window').to.equal(200);
      const multi = signed(secret, body, { extraSignatures: ['v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', 'v2,abc'] });
      expect((await deliver(body, multi)).status, 'multi-signature').to.equal(200);
    });

    it('refuses a body of 1 MiB + 1 with 401 and decodes UTF-8 strictly', async () => {
      const huge = Buffer.alloc(1024 * 1024 + 1, 0x20);
      const tooBig = await deliver(huge, signed(secret, huge));
      expect(tooBig.status).to.equal(401);
      const bad = Buffer.concat([Buffer.from('{"event_type":"incident.created","data":{"id":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]);
      expect((await deliver(bad, { ...signed(newSecret(), bad) })).status, 'unsigned bad bytes').to.equal(401);
      expect((await deliver(bad, signed(secret, bad))).status, 'signed bad bytes').to.equal(400);
      const notJson = 'not json';
      expect((await deliver(notJson, signed(secret, notJson))).status).to.equal(400);
      const noId = event('incident.created', {});
      expect((await deliver(noId, signed(secret, noId))).status).to.equal(400);
    });

    it('passes the Standard Webhooks reference vector with an injected clock', async () => {
      const vectorSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
      const solo = await startTestNode({ engines: set });
      try {
        const o = await provisionOrg(solo);
        await solo.call('PUT', `/api/org/${o.orgId}/integrations/incident-io`, { token: o.ownerToken, body: { signingSecret: vectorSecret } });
        const headers = { 'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek', 'webhook-timestamp': '1614265330', 'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' };
        const rawBody = Buffer.from('{"test": 2432232314}');
        const at = (ms: number) => receiveIncidentIoWebhook({ ...solo.node.deps, clock: { now: () => ms } }, { headers, rawBody });
        const sent = 1614265330 * 1000;
        // Verified (a body without event_type is then a 400), at the boundary of the window, not beyond it.
        await at(sent + 300_000).then(() => expect.fail('not JSON of an event'), (err: Error & { code?: string }) => expect(err.code).to.equal('VALIDATION_FAILED'));
        await at(sent + 301_000).then(() => expect.fail('stale'), (err: Error & { reason?: string }) => expect(err.reason).to.equal('stale-timestamp'));
      } finally {
        await solo.close();
      }
    });

    it('is human-only for incidents and metrics readers', async () => {
      const tokens = await nonHumanTokens(t, org);
      for (const [kind, token] of Object.entries(tokens)) {
        expect((await t.inject('GET', '/api/incidents', { token })).status, kind).to.equal(403);
        expect((await t.inject('GET', '/api/security/metrics', { token })).status, kind).to.equal(403);
      }
      expect((await t.inject('GET', '/api/incidents?limit=0', { token: org.ownerToken })).status).to.equal(400);
      expect((await t.inject('GET', '/api/incidents?status=%27%3B--', { token: org.ownerToken })).status).to.equal(400);
    });
  });

  describe('secret selection across orgs', () => {
    const legacy = newSecret();
    let t: TestNode;
    before(async () => { t = await startTestNode({ engines: set, config: { incidentIoSecret: legacy } }); });
    after(async () => { await t?.close(); });
    const body = () => event('incident.created', { id: `inc-${randomUUID()}` });
    const deliver = (b: string, headers: Record<string, string>, org?: string) =>
      t.inject('POST', org ? `${PATH}?org=${org}` : PATH, { rawBody: b, headers });

    it('uses the legacy secret for the one org the platform admin gives it to, never for per-org rows (issue 16)', async () => {
      const perOrg = await provisionOrg(t);
      await t.inject('PUT', `/api/org/${perOrg.orgId}/integrations/incident-io`, { token: perOrg.ownerToken, body: { signingSecret: newSecret() } });
      const b1 = body();
      expect((await deliver(b1, signed(legacy, b1))).status, 'no environment-only row').to.equal(401);

      // An org cannot take the environment secret for itself.
      const envOrg = await provisionOrg(t);
      const taken = await t.inject('PUT', `/api/org/${envOrg.orgId}/integrations/incident-io`, { token: envOrg.ownerToken, body: { useEnvironmentSecret: true } });
      expect(taken.status, taken.text).to.equal(400);
      expect((await t.inject('PUT', ENV_SECRET, { token: envOrg.ownerToken, body: { orgId: envOrg.orgId } })).status, 'org credentials on the admin route').to.equal(403);

      const given = await t.inject('PUT', ENV_SECRET, { token: t.adminToken, body: { orgId: envOrg.orgId } });
      expect(given.status, given.text).to.equal(200);
      expect(given.json).to.deep.equal({ orgId: envOrg.orgId, previousOrgId: null, webhookUrl: `${PATH}?org=${envOrg.orgId}` });
      const b2 = body();
      const ok = await deliver(b2, signed(legacy, b2));
      expect(ok.status, ok.text).to.equal(200);
      const listed = await t.inject('GET', '/api/incidents', { token: envOrg.ownerToken });
      expect(listed.json.incidents.map((i: { id: string }) => i.id)).to.deep.equal([ok.json.incidentId]);
      const b2routed = body();
      expect((await deliver(b2routed, signed(legacy, b2routed), envOrg.orgId)).status, 'routed by ?org= too').to.equal(200);

      // Another org's attempt changes nothing; the admin moving it does, and both chains say so.
      const secondEnv = await provisionOrg(t);
      expect((await t.inject('PUT', `/api/org/${secondEnv.orgId}/integrations/incident-io`, { token: secondEnv.ownerToken, body: { useEnvironmentSecret: true } })).status).to.equal(400);
      const b3 = body();
      expect((await deliver(b3, signed(legacy, b3))).status, 'still the first org\'s').to.equal(200);
      const moved = await t.inject('PUT', ENV_SECRET, { token: t.adminToken, body: { orgId: secondEnv.orgId } });
      expect(moved.json).to.include({ orgId: secondEnv.orgId, previousOrgId: envOrg.orgId });
      const b4 = body();
      const b4ok = await deliver(b4, signed(legacy, b4));
      expect(b4ok.status, b4ok.text).to.equal(200);
      expect((await t.inject('GET', '/api/incidents', { token: secondEnv.ownerToken })).json.incidents.map((i: { id: string }) => i.id)).to.deep.equal([b4ok.json.incidentId]);
      const b5 = body();
      expect((await deliver(b5, signed(legacy, b5), envOrg.orgId)).status, 'the first org lost it').to.equal(401);
      const auditTypes = async (o: ProvisionedOrg) =>
        (await t.inject('GET', '/api/audit?limit=20', { token: o.ownerToken })).json.entries.map((e: { type: string }) => e.type);
      expect(await auditTypes(envOrg)).to.include.members(['integration.environment_secret_assigned', 'integration.environment_secret_removed']);
      expect(await auditTypes(secondEnv)).to.include('integration.environment_secret_assigned');

      const removed = await t.inject('DELETE', ENV_SECRET, { token: t.adminToken });
      expect(removed.json).to.deep.equal({ orgId: null, previousOrgId: secondEnv.orgId, webhookUrl: null });
      const b6 = body();
      expect((await deliver(b6, signed(legacy, b6))).status).to.equal(401);
      expect((await t.inject('PUT', ENV_SECRET, { token: t.adminToken, body: { orgId: randomUUID() } })).status, 'an org that does not exist').to.equal(404);
    });

    it('checks a delivery whose URL names an org against that org\'s secret only, and keeps replay ids per org (issue 16)', async () => {
      const [a, b] = [await provisionOrg(t), await provisionOrg(t)];
      const [secretA, secretB] = [newSecret(), newSecret()];
      for (const [o, secret] of [[a, secretA], [b, secretB]] as const) {
        const put = await t.inject('PUT', `/api/org/${o.orgId}/integrations/incident-io`, { token: o.ownerToken, body: { signingSecret: secret } });
        expect(put.json.webhookUrl).to.equal(`${PATH}?org=${o.orgId}`);
      }
      const open = sinon.spy(t.node.deps.secrets, 'open');
      try {
        const toA = body();
        expect((await deliver(toA, signed(secretB, toA), a.orgId)).status, "B's signature on A's URL").to.equal(401);
        expect(open.callCount, "only A's secret is opened").to.equal(1);
      } finally {
        open.restore();
      }
      // The same webhook-id in two orgs is two deliveries: one org's ids neither collide with nor reveal another's.
      const id = `msg_${randomUUID()}`;
      const [ba, bb] = [body(), body()];
      expect((await deliver(ba, signed(secretA, ba, { id }), a.orgId)).status).to.equal(200);
      expect((await deliver(bb, signed(secretB, bb, { id }), b.orgId)).status).to.equal(200);
      expect((await deliver(ba, signed(secretA, ba, { id }), a.orgId)).status, 'a replay within the org').to.equal(401);
    });

    it('refuses a delivery that two orgs\' secrets both verify', async () => {
      const shared = newSecret();
      for (let i = 0; i < 2; i += 1) {
        const o = await provisionOrg(t);
        await t.inject('PUT', `/api/org/${o.orgId}/integrations/incident-io`, { token: o.ownerToken, body: { signingSecret: shared } });
      }
      const b = body();
      expect((await deliver(b, signed(shared, b))).status).to.equal(401);
    });
  });
});
