// Invariant (issue 16, decision 0026): rate limits answer 429 {error, code: RATE_LIMITED} with Retry-After and hold
// one caller without holding others: dispatches and writes per credential (a second key, GETs and workers go on),
// failed logins per (email, source) under a slower per-email ceiling (a stranger cannot lock a user out; past the
// ceiling the crowd's sources are refused while a clean source still signs in, and a new source has one guess an hour), and refused webhook deliveries per source before any signature is computed.
// On the real engine set the counters live in Redis.
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { signatureHeaderFor } from '../../../actors/services/integrations/webhooks/providers.js';
import { LOGIN_FAILURES_PER_SOURCE_PER_MINUTE } from '../../../storage/rate-limits.js';

const LOGIN_FAILURES_PER_EMAIL = 25;

const from = (address: string) => ({ 'x-forwarded-for': address });

for (const { set, skip } of engineSets) describe(`rate limits (${set} engines)`, function () {
  if (skip) return;
  this.timeout(120_000);
  let t: TestNode;
  let orgId: string; let projectId: string; let ownerToken: string; let keyA: string; let keyB: string; let runtimeJwt: string; let workerId: string;

  before(async () => {
    t = await startTestNode({
      engines: set,
      config: {
        rateLimitWritesPerMinute: 8, rateLimitDispatchesPerMinute: 3, rateLimitWebhookFailuresPerMinute: 3,
        rateLimitLoginFailuresPerEmailPerHour: LOGIN_FAILURES_PER_EMAIL, trustProxyHops: 1, rateLimitWebhookDeliveriesPerMinute: 4,
      },
    });
    const org = await t.call('POST', '/api/admin/orgs', {
      token: t.adminToken, body: { name: 'Limited', owner: { email: 'owner@limited.test', password: 'correct horse battery' } },
    });
    expect(org.status, org.text).to.equal(201);
    ({ orgId } = { orgId: org.json.org.id });
    projectId = org.json.project.id;
    ownerToken = org.json.userToken;
    const mint = async () => (await t.call('POST', `/api/org/${orgId}/keys`, { token: ownerToken, body: { name: randomUUID(), scopes: ['read', 'write'] } })).json.fullKey as string;
    [keyA, keyB] = [await mint(), await mint()];
    const daemon = await t.call('POST', '/v1/daemon/register', { body: { registrationToken: org.json.registrationToken, hostname: 'h', maxAgents: 1 } });
    ({ runtimeJwt, workerId } = daemon.json);
  });
  after(async () => { await t?.close(); });

  const expectLimited = (res: { status: number; json: any; headers: Headers; text: string }, what: string, windowSeconds = 60) => {
    expect(res.status, `${what}: ${res.text}`).to.equal(429);
    expect(res.json.code).to.equal('RATE_LIMITED');
    expect(Number(res.headers.get('retry-after')), 'Retry-After in whole seconds').to.be.within(1, windowSeconds);
  };

  it('limits dispatches and writes per credential: the next one is 429 with Retry-After, another key and reads go on', async () => {
    const dispatch = (token: string) => t.call('POST', '/api/agent-dispatch', { token, body: { projectId, prompt: 'go' } });
    for (let i = 0; i < 3; i += 1) expect((await dispatch(keyA)).status).to.equal(201);
    expectLimited(await dispatch(keyA), 'fourth dispatch');
    expect((await dispatch(keyB)).status, 'another key has its own count').to.equal(201);
    expect((await t.call('GET', '/api/sessions?trackerIssue=X', { token: keyA })).status, 'reads are not limited').to.equal(200);

    // The three dispatches it was allowed count as writes too (3 of 8): five more writes, then the ninth is refused.
    const write = () => t.call('POST', '/api/approval-gates', { token: keyA, body: { projectId, title: 'gate' } });
    for (let i = 0; i < 5; i += 1) expect((await write()).status).to.equal(201);
    expectLimited(await write(), 'the ninth write');
    // A worker's heartbeats are its org's business, never limited here.
    for (let i = 0; i < 12; i += 1) {
      expect((await t.call('POST', '/api/daemon/heartbeat', { token: runtimeJwt, body: { workerId } })).status).to.equal(200);
    }
  });

  it('counts failed logins per (email, source): a stranger\'s failures do not lock the user out', async () => {
    const login = (password: string, source: string) =>
      t.call('POST', '/api/auth/login', { headers: from(source), body: { email: 'owner@limited.test', password } });
    for (let i = 0; i < LOGIN_FAILURES_PER_SOURCE_PER_MINUTE; i += 1) expect((await login('wrong', '203.0.113.9')).status).to.equal(401);
    expectLimited(await login('correct horse battery', '203.0.113.9'), 'the failing source, even with the right password');
    const mine = await login('correct horse battery', '198.51.100.7');
    expect(mine.status, 'the user from their own address').to.equal(200);
  });

  it('past the per-email ceiling, refuses the guessing sources and lets each other source one try an hour', async () => {
    await t.call('POST', `/api/admin/orgs/${orgId}/users`, { token: t.adminToken, body: { email: 'target@limited.test', role: 'viewer', password: 'the right one' } });
    const login = (password: string, source: string) =>
      t.call('POST', '/api/auth/login', { headers: from(source), body: { email: 'target@limited.test', password } });
    const perSource = LOGIN_FAILURES_PER_SOURCE_PER_MINUTE;
    const sources = Math.ceil(LOGIN_FAILURES_PER_EMAIL / perSource);
    await Promise.all(Array.from({ length: sources }, async (_, s) => {
      for (let i = 0; i < perSource; i += 1) await login('guess', `192.0.2.${s + 1}`);
    }));
    // The guessers are refused, even with the right password.
    expectLimited(await login('the right one', '192.0.2.1'), 'a guessing source past the email\'s ceiling', 3600);
    // The user, from an address with no failures of its own, is not locked out (issue 30, item 3).
    expect((await login('the right one', '192.0.2.200')).status, 'the user from a clean address').to.equal(200);
    // A new address past the ceiling gets one guess; after a wrong one it waits out the hour, right password or not.
    expect((await login('another guess', '192.0.2.201')).status).to.equal(401);
    expectLimited(await login('the right one', '192.0.2.201'), 'a source that failed past the ceiling', 3600);
  });

  it('refuses webhook deliveries from a source that sent too many bad ones, before checking any signature', async () => {
    const secret = randomBytes(20).toString('hex');
    const put = await t.call('PUT', `/api/org/${orgId}/integrations/vercel`, { token: ownerToken, body: { signingSecret: secret } });
    expect(put.status, put.text).to.equal(200);
    const deliver = (source: string, signingSecret: string) => {
      const body = JSON.stringify({ id: `evt_${randomUUID()}`, type: 'deployment.succeeded', payload: {} });
      return t.call('POST', `/api/webhooks/ingest/vercel?org=${orgId}`, {
        rawBody: body, headers: { 'content-type': 'application/json', ...from(source), ...signatureHeaderFor('vercel', signingSecret, body) },
      });
    };
    for (let i = 0; i < 3; i += 1) expect((await deliver('203.0.113.50', 'forged')).status).to.equal(401);
    expectLimited(await deliver('203.0.113.50', secret), 'a good delivery from the same source');
    const incident = await t.call('POST', '/api/webhooks/ingest/incident-io', { rawBody: '{}', headers: { 'content-type': 'application/json', ...from('203.0.113.50') } });
    expectLimited(incident, 'the incident webhook counts the same source');
    expect((await deliver('198.51.100.60', secret)).status, 'another source').to.equal(200);

    // Verified deliveries count against their org (issue 30): 4 a minute here, one spent above; a forged one spends none.
    for (let i = 0; i < 3; i += 1) expect((await deliver(`198.51.100.${70 + i}`, secret)).status).to.equal(200);
    const over = await deliver('198.51.100.80', secret);
    expectLimited(over, "a verified delivery past the org's limit");
    expect(over.json.error).to.include('TROUPE_RATE_LIMIT_WEBHOOK_DELIVERIES_PER_MINUTE');
    expect((await deliver('198.51.100.81', 'forged')).status, 'a forged one is refused as forged, not counted').to.equal(401);
  });
});
