// Invariant: a user's web-push subscription receives a real RFC 8291 (aes128gcm) encrypted notification signed
// with an RFC 8292 VAPID token for the node's public key: a push service on loopback verifies the JWT and decrypts
// the payload with the subscription's private key. The public key is null when web push is unconfigured; a
// credential without a user is 403; a 410 from the push service removes the subscription.
import { createDecipheriv, createECDH, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { importJWK, jwtVerify } from 'jose';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { hostileBodies, provision, type Org } from './fixtures.js';

interface Received { path: string; headers: http.IncomingHttpHeaders; body: Buffer }

/** Decrypts an aes128gcm push message body (RFC 8188 framing, RFC 8291 key derivation) as a browser would. */
function decryptPush(body: Buffer, uaPrivate: ReturnType<typeof createECDH>, authSecret: Buffer): string {
  const salt = body.subarray(0, 16);
  const idlen = body[20]!;
  const asPublic = body.subarray(21, 21 + idlen);
  const ciphertext = body.subarray(21 + idlen);
  const uaPublic = uaPrivate.getPublicKey();
  const ecdhSecret = uaPrivate.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', ecdhSecret, authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  expect(padded[end], 'last-record delimiter').to.equal(2);
  return padded.subarray(0, end).toString('utf8');
}

async function verifyVapid(headers: http.IncomingHttpHeaders, audience: string, expectedKey: string) {
  const m = /^vapid t=([^,]+),\s*k=(.+)$/.exec(headers.authorization ?? '');
  expect(m, `authorization header ${headers.authorization}`).to.not.equal(null);
  const [, token = '', k = ''] = m!;
  expect(k).to.equal(expectedKey);
  const point = Buffer.from(k, 'base64url');
  const key = await importJWK({ kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33, 65).toString('base64url') }, 'ES256');
  const { payload, protectedHeader } = await jwtVerify(token, key, { audience });
  expect(protectedHeader.alg).to.equal('ES256');
  expect(payload.sub).to.equal('mailto:ops@troupe.test');
  expect(payload.exp! - Date.now() / 1000).to.be.within(0, 24 * 3600);
}

for (const { set, skip } of engineSets) describe(`web push over HTTP (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: Org;
  let pushService: http.Server;
  let pushBase: string;
  const received: Received[] = [];
  const gone = new Set<string>();

  before(async () => {
    pushService = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(gone.has(req.url ?? '') ? 410 : 201).end();
      });
    });
    await new Promise<void>((resolve) => pushService.listen(0, '127.0.0.1', resolve));
    pushBase = `http://127.0.0.1:${(pushService.address() as AddressInfo).port}`;
    t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1'], webPushSubject: 'mailto:ops@troupe.test' } });
    org = await provision(t);
  });
  after(async () => {
    await t?.close();
    pushService.closeAllConnections();
    await new Promise((resolve) => pushService.close(resolve));
  });

  const browser = () => {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const auth = randomBytes(16);
    return { ecdh, auth, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } };
  };

  it('publishes one stable VAPID public key (a P-256 point)', async () => {
    const a = await t.inject('GET', '/api/notifications/web-push/public-key', { token: org.apiKey });
    expect(a.status, a.text).to.equal(200);
    expect(Buffer.from(a.json.publicKey, 'base64url')).to.have.length(65);
    const b = await t.inject('GET', '/api/notifications/web-push/public-key', { token: org.ownerToken });
    expect(b.json.publicKey).to.equal(a.json.publicKey);
    expect((await t.inject('GET', '/api/notifications/web-push/public-key')).status).to.equal(401);
  });

  it('delivers an encrypted, VAPID-signed notification the subscriber can decrypt', async () => {
    const b = browser();
    const endpoint = `${pushBase}/push/${randomBytes(8).toString('hex')}`;
    const sub = await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: { endpoint, keys: b.keys, expirationTime: null } });
    expect(sub.status, sub.text).to.equal(201);
    expect(sub.json.id).to.be.a('string');
    const again = await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: { endpoint, keys: b.keys } });
    expect(again.json.id, 're-subscribing keeps the id').to.equal(sub.json.id);

    const sent = await t.inject('POST', '/api/notifications/web-push/test', { token: org.ownerToken, body: { title: 'Gate open', body: 'Ship it?' } });
    expect(sent.status, sent.text).to.equal(200);
    expect(sent.json).to.deep.equal({ sent: 1, removed: 0, failed: 0 });
    const msg = received.find((r) => r.path === new URL(endpoint).pathname)!;
    expect(msg.headers['content-encoding']).to.equal('aes128gcm');
    expect(Number(msg.headers.ttl)).to.be.greaterThan(0);
    const publicKey = (await t.inject('GET', '/api/notifications/web-push/public-key', { token: org.ownerToken })).json.publicKey;
    await verifyVapid(msg.headers, pushBase, publicKey);
    expect(JSON.parse(decryptPush(msg.body, b.ecdh, b.auth))).to.deep.equal({ title: 'Gate open', body: 'Ship it?', tag: 'test' });

    const del = await t.inject('DELETE', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: { endpoint } });
    expect(del.status, del.text).to.equal(200);
    expect((await t.inject('DELETE', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: { endpoint } })).status).to.equal(404);
    expect((await t.inject('POST', '/api/notifications/web-push/test', { token: org.ownerToken, body: {} })).json.sent).to.equal(0);
  });

  it('removes a subscription the push service says is gone (410)', async () => {
    const b = browser();
    const path = `/push/${randomBytes(8).toString('hex')}`;
    gone.add(path);
    await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: { endpoint: `${pushBase}${path}`, keys: b.keys } });
    expect((await t.inject('POST', '/api/notifications/web-push/test', { token: org.ownerToken, body: {} })).json).to.deep.equal({ sent: 0, removed: 1, failed: 0 });
    expect((await t.inject('POST', '/api/notifications/web-push/test', { token: org.ownerToken, body: {} })).json).to.deep.equal({ sent: 0, removed: 0, failed: 0 });
  });

  it('one broken subscription does not stop the user\'s others from being notified (issue 16)', async () => {
    const other = await provision(t);
    const good = browser();
    const endpoint = `${pushBase}/push/${randomBytes(8).toString('hex')}`;
    expect((await t.inject('POST', '/api/notifications/web-push/subscribe', { token: other.ownerToken, body: { endpoint, keys: good.keys } })).status).to.equal(201);
    // A subscription stored before points were checked: 65 bytes, 0x04 first, not on the curve.
    const badPoint = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url');
    await t.node.deps.db('web_push_subscriptions').insert({
      ...(await t.node.deps.db('web_push_subscriptions').where({ org_id: other.orgId }).first()),
      id: randomUUID(), endpoint: `${pushBase}/push/broken-${randomBytes(4).toString('hex')}`, p256dh: badPoint,
    });
    const sent = await t.inject('POST', '/api/notifications/web-push/test', { token: other.ownerToken, body: { title: 'Both?' } });
    expect(sent.status, sent.text).to.equal(200);
    expect(sent.json).to.deep.equal({ sent: 1, removed: 0, failed: 1 });
    expect(received.some((r) => r.path === new URL(endpoint).pathname)).to.equal(true);
  });

  it('refuses credentials without a user, internal endpoints, malformed keys and hostile bodies', async () => {
    const b = browser();
    const body = { endpoint: `${pushBase}/push/x`, keys: b.keys };
    expect((await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.apiKey, body })).status).to.equal(403);
    expect((await t.inject('POST', '/api/notifications/web-push/subscribe', { body })).status).to.equal(401);
    expect((await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: { ...body, endpoint: 'http://169.254.169.254/push' } })).status).to.equal(400);
    expect((await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: { ...body, endpoint: 'http://[::1]:1/push' } })).status).to.equal(400);
    const shortKey = { ...body, keys: { ...b.keys, p256dh: Buffer.alloc(64, 4).toString('base64url') + 'AA' } };
    const offCurve = { ...body, keys: { ...b.keys, p256dh: Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url') } };
    const refused = await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: offCurve });
    expect([refused.status, refused.json.details?.field], '65 bytes that are no P-256 point (issue 16)').to.deep.equal([400, 'keys.p256dh']);
    expect((await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: shortKey })).status).to.equal(400);
    expect((await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.ownerToken, body: { ...body, keys: { ...b.keys, auth: 'AAAAAAAAAAAAAAAAAAAAAAAAAA' } } })).status).to.equal(400);
    for (const rawBody of hostileBodies) {
      const r = await t.inject('POST', '/api/notifications/web-push/subscribe', { token: org.ownerToken, rawBody, headers: { 'content-type': 'application/json' } });
      expect(r.status, r.text).to.be.within(400, 499);
    }
  });

  it('answers a null public key and refuses subscriptions when web push is not configured', async () => {
    const plain = await startTestNode({ engines: set });
    try {
      const o = await provision(plain);
      const r = await plain.inject('GET', '/api/notifications/web-push/public-key', { token: o.ownerToken });
      expect(r.status).to.equal(200);
      expect(r.json).to.deep.equal({ publicKey: null });
      const b = browser();
      expect((await plain.inject('POST', '/api/notifications/web-push/subscribe', { token: o.ownerToken, body: { endpoint: 'https://push.example.test/x', keys: b.keys } })).status).to.equal(409);
    } finally {
      await plain.close();
    }
  });
});
