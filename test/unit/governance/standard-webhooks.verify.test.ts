// Invariant: Standard Webhooks verification accepts exactly what the reference implementation signs (its published
// vector), any one matching `v1` entry among several, and refuses tampered bodies, other versions, malformed
// headers and timestamps outside the five-minute window (the boundary itself is inside).
import { expect } from 'chai';
import {
  assertFresh, parseSignedHeaders, secretKey, sign, signedBy, WebhookRefusal,
} from '../../../actors/services/governance/standard-webhooks.js';

// From standard-webhooks/standard-webhooks libraries/javascript/src/webhook.test.ts ("sign function works").
const vector = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: '1614265330',
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

const refusal = (fn: () => unknown): string => {
  try { fn(); } catch (err) { if (err instanceof WebhookRefusal) return err.reason; throw err; }
  return 'accepted';
};

describe('standard webhooks verification', () => {
  const key = secretKey(vector.secret)!;
  const headers = (signature: string, timestamp = vector.timestamp) => ({ 'webhook-id': vector.id, 'webhook-timestamp': timestamp, 'webhook-signature': signature });

  it('signs the reference vector exactly, with or without the whsec_ prefix', () => {
    expect(sign(key, vector.id, vector.timestamp, vector.body)).to.equal(vector.signature);
    expect(sign(secretKey(vector.secret.slice(6))!, vector.id, vector.timestamp, Buffer.from(vector.body))).to.equal(vector.signature);
  });

  it('accepts the vector and any single matching v1 entry among several', () => {
    expect(signedBy(key, parseSignedHeaders(headers(vector.signature)), Buffer.from(vector.body))).to.equal(true);
    const multi = ['v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', 'v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', vector.signature, 'v1a,xyz'].join(' ');
    expect(signedBy(key, parseSignedHeaders(headers(multi)), Buffer.from(vector.body))).to.equal(true);
  });

  it('refuses a tampered body, a tampered id and another secret', () => {
    const parsed = parseSignedHeaders(headers(vector.signature));
    expect(signedBy(key, parsed, Buffer.from('{"test": 2432232315}'))).to.equal(false);
    expect(signedBy(key, { ...parsed, id: 'msg_other' }, Buffer.from(vector.body))).to.equal(false);
    expect(signedBy(secretKey('whsec_' + Buffer.alloc(24, 7).toString('base64'))!, parsed, Buffer.from(vector.body))).to.equal(false);
  });

  it('refuses missing and malformed headers', () => {
    expect(refusal(() => parseSignedHeaders({}))).to.equal('missing-headers');
    expect(refusal(() => parseSignedHeaders(headers(vector.signature, 'hello')))).to.equal('malformed-timestamp');
    expect(refusal(() => parseSignedHeaders(headers(vector.signature, '-1614265330')))).to.equal('malformed-timestamp');
    expect(refusal(() => parseSignedHeaders(headers(vector.signature, '1614265330.5')))).to.equal('malformed-timestamp');
    expect(refusal(() => parseSignedHeaders(headers('v1,')))).to.equal('malformed-signature');
    expect(refusal(() => parseSignedHeaders(headers(vector.signature.slice(0, 8))))).to.equal('malformed-signature');
    expect(refusal(() => parseSignedHeaders(headers('v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=')))).to.equal('malformed-signature');
    expect(refusal(() => parseSignedHeaders({ ...headers(vector.signature), 'webhook-id': 'has space' }))).to.equal('malformed-id');
    expect(refusal(() => parseSignedHeaders(headers('v1,' + 'A'.repeat(5000))))).to.equal('malformed-signature');
  });

  it('keeps a five-minute window either way, boundary included', () => {
    const sent = Number(vector.timestamp) * 1000;
    expect(refusal(() => assertFresh(vector.timestamp, sent + 300_000))).to.equal('accepted');
    expect(refusal(() => assertFresh(vector.timestamp, sent + 300_999))).to.equal('accepted');
    expect(refusal(() => assertFresh(vector.timestamp, sent + 301_000))).to.equal('stale-timestamp');
    expect(refusal(() => assertFresh(vector.timestamp, sent - 300_000))).to.equal('accepted');
    expect(refusal(() => assertFresh(vector.timestamp, sent - 301_000))).to.equal('stale-timestamp');
  });

  it('rejects secrets that are not base64 of at least 16 bytes', () => {
    expect(secretKey('whsec_***')).to.equal(undefined);
    expect(secretKey('whsec_' + Buffer.alloc(8).toString('base64'))).to.equal(undefined);
  });
});
