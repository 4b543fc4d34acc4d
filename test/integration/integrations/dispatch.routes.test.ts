// Invariant: through the node's HTTP edge (injected, no socket), a dispatch by a credential bound to a keyed requester is created only
// with a fresh, valid Ed25519 signature of that exact request for that requester; a light requester without key,
// an unbound key and a user token need no headers; a strict requester without key (or a binding to a requester the
// org lacks) is 403. A nonce is accepted once — unless the cache is down, when replays pass but signature and
// timestamp are still enforced. Requester registration is admin-only, org-scoped, and refuses malformed keys.
import { expect } from 'chai';
import { createHash, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { addUser, nonHumanTokens, provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { canonicalEnvelope } from '../../../actors/services/integrations/requesters/signed-dispatch.js';
import { deriveSigningKeys, signToken } from '../../../actors/services/identity/tokens.js';
import sinon from 'sinon';
import { TroupeError } from '../../../ops/kernel/errors.js';

interface KeyPair { publicKey: KeyObject; privateKey: KeyObject; publicB64: string }
function keyPair(): KeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { publicKey, privateKey, publicB64: publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64') };
}

function signingHeaders(key: KeyObject, requesterId: string, rawBody: string, opts: { timestamp?: number; nonce?: string; path?: string } = {}) {
  const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  const nonce = opts.nonce ?? randomUUID().replace(/-/g, '');
  const envelope = canonicalEnvelope({
    bodySha256: createHash('sha256').update(rawBody).digest('hex'), method: 'POST', nonce,
    path: opts.path ?? '/api/agent-dispatch', requesterId, timestamp,
  });
  return {
    'x-troupe-request-timestamp': timestamp, 'x-troupe-request-nonce': nonce,
    'x-troupe-request-signature': sign(null, Buffer.from(envelope), key).toString('base64'),
  };
}

async function register(t: TestNode, org: ProvisionedOrg, body: Record<string, unknown>): Promise<string> {
  const r = await t.inject('POST', `/api/org/${org.orgId}/requesters`, { token: org.ownerToken, body });
  expect(r.status, r.text).to.equal(201);
  return r.json.requester.id as string;
}

async function boundKey(t: TestNode, org: ProvisionedOrg, requesterId: string): Promise<string> {
  const r = await t.inject('POST', `/api/org/${org.orgId}/keys`, { token: org.ownerToken, body: { name: `bound-${requesterId.slice(0, 8)}`, requesterId } });
  expect(r.status, r.text).to.equal(201);
  return r.json.fullKey as string;
}

for (const { set, skip } of engineSets) describe(`integrations: signed agent dispatch (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);

  describe('with a working cache', () => {
    let t: TestNode;
    let org: ProvisionedOrg;
    let other: ProvisionedOrg;
    const keys = keyPair();
    let keyed: { id: string; apiKey: string };
    let twin: { id: string; apiKey: string };

    before(async () => {
      t = await startTestNode({ engines: set });
      org = await provisionOrg(t);
      other = await provisionOrg(t);
      const id = await register(t, org, { name: 'ci-bot', mode: 'strict', publicKey: keys.publicB64 });
      keyed = { id, apiKey: await boundKey(t, org, id) };
      // Same key pair, another registration: a signature for one must not pass for the other.
      const twinId = await register(t, org, { name: 'ci-bot-twin', mode: 'light', publicKey: keys.publicB64 });
      twin = { id: twinId, apiKey: await boundKey(t, org, twinId) };
    });
    after(async () => { await t?.close(); });

    const bodyText = () => JSON.stringify({ projectId: org.projectId, prompt: `Fix it ${randomUUID()}` });
    const dispatch = (token: string, rawBody: string, headers: Record<string, string> = {}) =>
      t.inject('POST', '/api/agent-dispatch', { token, rawBody, headers: { 'content-type': 'application/json', ...headers } });

    it('needs no headers from a user token, an unbound key, or a key bound to a light requester without key', async () => {
      expect((await dispatch(org.ownerToken, bodyText())).status).to.equal(201);
      expect((await dispatch(org.apiKey, bodyText())).status).to.equal(201);
      const light = await register(t, org, { name: 'light-no-key', mode: 'light' });
      const r = await dispatch(await boundKey(t, org, light), bodyText());
      expect(r.status, r.text).to.equal(201);
      expect(r.json).to.include({ status: 'pending' });
    });

    it('refuses a key bound to a strict requester without key (403), or to a requester of another org (403)', async () => {
      const strict = await register(t, org, { name: 'strict-no-key', mode: 'strict' });
      const r = await dispatch(await boundKey(t, org, strict), bodyText());
      expect(r.status).to.equal(403);
      const foreign = await register(t, other, { name: 'foreign', mode: 'light', publicKey: keys.publicB64 });
      const b = bodyText();
      const crossOrg = await dispatch(await boundKey(t, org, foreign), b, signingHeaders(keys.privateKey, foreign, b));
      expect(crossOrg.status).to.equal(403);
    });

    it('a keyed requester: unsigned 401, signed 201, the same nonce again 401', async () => {
      const b = bodyText();
      expect((await dispatch(keyed.apiKey, b)).status).to.equal(401);
      const headers = signingHeaders(keys.privateKey, keyed.id, b);
      const ok = await dispatch(keyed.apiKey, b, headers);
      expect(ok.status, ok.text).to.equal(201);
      const replay = await dispatch(keyed.apiKey, b, headers);
      expect(replay.status).to.equal(401);
    });

    it('a dispatch refused for an outage gives its nonce back (the same signed request retried is 201); one that may have happened keeps it', async () => {
      const deps = t.node.deps;
      const refusedThenRetried = async (fail: () => sinon.SinonStub, code: string, status = 503) => {
        const b = bodyText();
        const headers = signingHeaders(keys.privateKey, keyed.id, b);
        const stub = fail();
        try {
          const refused = await dispatch(keyed.apiKey, b, headers);
          expect(refused.status, refused.text).to.equal(status);
          expect(refused.json.code).to.equal(code);
        } finally {
          stub.restore();
        }
        return (await dispatch(keyed.apiKey, b, headers)).status;
      };
      // Cedar's policy store unreadable (between the nonce check and the handler), then the broker down at the ask.
      expect(await refusedThenRetried(() => sinon.stub(deps.authz, 'authorize').rejects(new TroupeError('STORAGE_UNAVAILABLE')), 'STORAGE_UNAVAILABLE')).to.equal(201);
      expect(await refusedThenRetried(() => sinon.stub(deps, 'ask').rejects(new TroupeError('TRANSPORT_UNAVAILABLE')), 'TRANSPORT_UNAVAILABLE')).to.equal(201);
      // No answer in time: the session actor may have dispatched, so the same request again is a replay.
      expect(await refusedThenRetried(() => sinon.stub(deps, 'ask').rejects(new TroupeError('TRANSPORT_TIMEOUT')), 'TRANSPORT_TIMEOUT')).to.equal(401);
      // A refusal that is not an outage keeps it too: Cedar's denial.
      expect(await refusedThenRetried(() => sinon.stub(deps.authz, 'authorize').rejects(new TroupeError('AUTHZ_DENIED')), 'AUTHZ_DENIED', 403)).to.equal(401);
    });

    it('never passes a signature made for another requester, a tampered body, another path, or outside ±300 s', async () => {
      const b = bodyText();
      expect((await dispatch(twin.apiKey, b, signingHeaders(keys.privateKey, keyed.id, b))).status, 'made for the twin requester').to.equal(401);
      expect((await dispatch(twin.apiKey, b, signingHeaders(keys.privateKey, twin.id, b))).status, 'the twin signing for itself').to.equal(201);
      expect((await dispatch(keyed.apiKey, b.replace('Fix', 'Break'), signingHeaders(keys.privateKey, keyed.id, b))).status).to.equal(401);
      expect((await dispatch(keyed.apiKey, b, signingHeaders(keys.privateKey, keyed.id, b, { path: '/api/agent-dispatch?x=1' }))).status).to.equal(401);
      const now = Math.floor(Date.now() / 1000);
      expect((await dispatch(keyed.apiKey, b, signingHeaders(keys.privateKey, keyed.id, b, { timestamp: now - 302 }))).status).to.equal(401);
      expect((await dispatch(keyed.apiKey, b, signingHeaders(keys.privateKey, keyed.id, b, { timestamp: now + 302 }))).status).to.equal(401);
      expect((await dispatch(keyed.apiKey, b, signingHeaders(keys.privateKey, keyed.id, b, { timestamp: now - 290 }))).status).to.equal(201);
      const stranger = keyPair();
      expect((await dispatch(keyed.apiKey, b, signingHeaders(stranger.privateKey, keyed.id, b))).status).to.equal(401);
    });

    it('a machine token bound to the requester (rqid) must sign too', async () => {
      const jwtKeys = deriveSigningKeys(t.node.deps.secrets);
      const { token } = await signToken(jwtKeys, t.node.deps.clock, 'machine', { cid: randomUUID(), org: org.orgId, scope: ['write'], rqid: keyed.id });
      const b = bodyText();
      expect((await dispatch(token, b)).status).to.equal(401);
      expect((await dispatch(token, b, signingHeaders(keys.privateKey, keyed.id, b))).status).to.equal(201);
    });

    it('hostile signing headers are 401, never 5xx', async () => {
      const b = bodyText();
      const good = signingHeaders(keys.privateKey, keyed.id, b);
      for (const [name, value] of [
        ['x-troupe-request-signature', 'A'.repeat(5000)], ['x-troupe-request-signature', '%%%'], ['x-troupe-request-timestamp', '9'.repeat(40)],
        ['x-troupe-request-nonce', '../../../etc/passwd'], ['x-troupe-request-signature', Buffer.alloc(64).toString('base64')],
      ] as const) {
        const r = await dispatch(keyed.apiKey, b, { ...good, [name]: value });
        expect(r.status, `${name}=${value.slice(0, 20)}`).to.equal(401);
      }
    });

    describe('registration', () => {
      const path = (orgId: string) => `/api/org/${orgId}/requesters`;
      it('is admin-only and org-scoped; lists only the org\'s own', async () => {
        const member = await addUser(t, org.orgId, 'member');
        const tokens = await nonHumanTokens(t, org);
        const body = { name: `r-${randomUUID()}`, mode: 'light' };
        expect((await t.inject('POST', path(org.orgId), { token: member.token, body })).status).to.equal(403);
        expect((await t.inject('POST', path(org.orgId), { token: other.ownerToken, body })).status).to.equal(403);
        expect((await t.inject('POST', path(org.orgId), { token: tokens.runtime, body })).status).to.equal(403);
        expect((await t.inject('POST', path(org.orgId), { body })).status).to.equal(401);
        expect((await t.inject('POST', path(org.orgId), { token: t.adminToken, body })).status).to.equal(403);
        const list = await t.inject('GET', path(org.orgId), { token: org.ownerToken });
        expect(list.status).to.equal(200);
        expect(list.json.requesters.map((r: { id: string }) => r.id)).to.include(keyed.id);
        expect(list.json.requesters.every((r: { orgId: string }) => r.orgId === org.orgId)).to.equal(true);
        expect((await t.inject('GET', path(org.orgId), { token: other.ownerToken })).status).to.equal(403);
      });

      it('refuses malformed public keys, bad modes and duplicate names', async () => {
        const raw = keyPair().publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
        for (const publicKey of [raw.toString('base64url'), raw.toString('base64').replace('=', ''), raw.subarray(0, 31).toString('base64'),
          Buffer.concat([raw, Buffer.from([1])]).toString('base64'), ` ${raw.toString('base64').slice(1)}`, 'x'.repeat(44), 42]) {
          const r = await t.inject('POST', path(org.orgId), { token: org.ownerToken, body: { name: `k-${randomUUID()}`, mode: 'strict', publicKey } });
          expect(r.status, String(publicKey)).to.equal(400);
        }
        for (const body of [{ name: 'x', mode: 'loose' }, { mode: 'light' }, { name: '   ', mode: 'light' }, { name: 'x', mode: 'light', extra: true }]) {
          expect((await t.inject('POST', path(org.orgId), { token: org.ownerToken, body })).status, JSON.stringify(body)).to.equal(400);
        }
        expect((await t.inject('POST', path(org.orgId), { token: org.ownerToken, body: { name: 'ci-bot', mode: 'light' } })).status).to.equal(409);
      });
    });
  });

  describe('with the cache down (a Redis client aimed at a closed port)', () => {
    let t: TestNode;
    let org: ProvisionedOrg;
    const keys = keyPair();
    let keyed: { id: string; apiKey: string };

    before(async () => {
      t = await startTestNode({ engines: set, config: { redisUrl: 'redis://127.0.0.1:1' } });
      org = await provisionOrg(t);
      const id = await register(t, org, { name: 'bot', mode: 'strict', publicKey: keys.publicB64 });
      keyed = { id, apiKey: await boundKey(t, org, id) };
    });
    after(async () => { await t?.close(); });

    it('skips the nonce check but still enforces signature and timestamp', async () => {
      expect(await t.node.deps.cache.ping().catch(() => false)).to.equal(false);
      const b = JSON.stringify({ projectId: org.projectId, prompt: 'go' });
      const headers = signingHeaders(keys.privateKey, keyed.id, b);
      const send = (h: Record<string, string>, body = b) =>
        t.inject('POST', '/api/agent-dispatch', { token: keyed.apiKey, rawBody: body, headers: { 'content-type': 'application/json', ...h } });
      expect((await send(headers)).status).to.equal(201);
      expect((await send(headers)).status, 'replay passes while the cache is down').to.equal(201);
      expect((await send(headers, b.replace('go', 'GO'))).status).to.equal(401);
      expect((await send(signingHeaders(keys.privateKey, keyed.id, b, { timestamp: Math.floor(Date.now() / 1000) - 400 }))).status).to.equal(401);
      expect((await send({})).status).to.equal(401);
    });
  });
});
