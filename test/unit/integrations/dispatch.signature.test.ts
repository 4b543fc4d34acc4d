// Invariant: a dispatch signature passes only when it is a canonical 64-byte Ed25519 signature, in strict standard
// base64, by the requester's key, over the exact canonical envelope naming that requester, method, path, body hash,
// nonce and timestamp, with the timestamp within ±300 s of the injected clock (both bounds inclusive).
import { expect } from 'chai';
import { createHash, createPrivateKey, sign } from 'node:crypto';
import {
  canonicalEnvelope, decodeStrictBase64, ed25519PublicKey, SIGNATURE_WINDOW_SECONDS, verifyDispatchSignature, type SignedRequest,
} from '../../../actors/services/integrations/requesters/signed-dispatch.js';
import { TroupeError } from '../../../ops/kernel/errors.js';

// RFC 8032 §7.1, TEST 1.
const vector1 = {
  secret: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  public: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  signature: 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
};
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, Buffer.from(vector1.secret, 'hex')]), format: 'der', type: 'pkcs8' });
const publicKey = ed25519PublicKey(Buffer.from(vector1.public, 'hex'));
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

const requesterId = '6f1c2a8e-3b9d-4c5e-8f7a-1b2c3d4e5f60';
const now = Date.UTC(2026, 0, 1, 12, 0, 0);
const nowSeconds = Math.floor(now / 1000);
const body = Buffer.from('{"projectId":"p","prompt":"go"}');

function signedRequest(opts: { timestamp?: number; nonce?: string; requester?: string; path?: string; body?: Buffer } = {}): SignedRequest & { headers: Record<string, string> } {
  const timestamp = String(opts.timestamp ?? nowSeconds);
  const nonce = opts.nonce ?? 'nonce-0123456789abcdef';
  const envelope = canonicalEnvelope({
    bodySha256: createHash('sha256').update(opts.body ?? body).digest('hex'), method: 'POST', nonce,
    path: opts.path ?? '/api/agent-dispatch', requesterId: opts.requester ?? requesterId, timestamp,
  });
  const signature = sign(null, Buffer.from(envelope), privateKey).toString('base64');
  return {
    method: 'POST', path: '/api/agent-dispatch', rawBody: body,
    headers: { 'x-troupe-request-timestamp': timestamp, 'x-troupe-request-nonce': nonce, 'x-troupe-request-signature': signature },
  };
}

function refusal(req: SignedRequest, at = now): string {
  try {
    verifyDispatchSignature(publicKey, requesterId, req, at);
  } catch (err) {
    expect(err).to.be.instanceOf(TroupeError);
    return (err as TroupeError).code;
  }
  return 'accepted';
}

describe('integrations: dispatch signature', () => {
  it('RFC 8032 test vector 1: our key construction yields its public key and signature', () => {
    const derived = ed25519PublicKey(Buffer.from(vector1.public, 'hex')).export({ format: 'der', type: 'spki' }).subarray(12);
    expect(derived.toString('hex')).to.equal(vector1.public);
    expect(sign(null, Buffer.alloc(0), privateKey).toString('hex')).to.equal(vector1.signature);
  });

  it('the canonical envelope is sorted-key JSON without whitespace', () => {
    expect(canonicalEnvelope({ bodySha256: 'ab', method: 'POST', nonce: 'n', path: '/api/agent-dispatch', requesterId: 'r', timestamp: '1' }))
      .to.equal('{"bodySha256":"ab","method":"POST","nonce":"n","path":"/api/agent-dispatch","requesterId":"r","timestamp":"1"}');
  });

  it('accepts a valid signature and the window bounds inclusive; refuses one second beyond either', () => {
    expect(refusal(signedRequest())).to.equal('accepted');
    expect(refusal(signedRequest({ timestamp: nowSeconds - SIGNATURE_WINDOW_SECONDS }))).to.equal('accepted');
    expect(refusal(signedRequest({ timestamp: nowSeconds + SIGNATURE_WINDOW_SECONDS }))).to.equal('accepted');
    // The clock's milliseconds do not widen the window: 300.999 s late is still inside, 301 is not.
    expect(refusal(signedRequest({ timestamp: nowSeconds - SIGNATURE_WINDOW_SECONDS }), now + 999)).to.equal('accepted');
    expect(refusal(signedRequest({ timestamp: nowSeconds - SIGNATURE_WINDOW_SECONDS - 1 }))).to.equal('AUTH_INVALID');
    expect(refusal(signedRequest({ timestamp: nowSeconds + SIGNATURE_WINDOW_SECONDS + 1 }))).to.equal('AUTH_INVALID');
  });

  it('a signature made for another requester, path or body never passes', () => {
    expect(refusal(signedRequest({ requester: '00000000-0000-4000-8000-000000000000' }))).to.equal('AUTH_INVALID');
    expect(refusal(signedRequest({ path: '/api/agent-dispatch/' }))).to.equal('AUTH_INVALID');
    expect(refusal(signedRequest({ body: Buffer.from('{"projectId":"p","prompt":"GO"}') }))).to.equal('AUTH_INVALID');
    const req = signedRequest();
    expect(refusal({ ...req, method: 'PUT' })).to.equal('AUTH_INVALID');
  });

  it('refuses non-canonical (S + L) and wrong-length signatures, and non-strict base64', () => {
    const req = signedRequest();
    const sig = Buffer.from(req.headers['x-troupe-request-signature']!, 'base64');
    let s = 0n;
    for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(sig[i]!);
    const bumped = s + L;
    expect(bumped < 2n ** 256n, 'S + L still fits in 32 bytes for this signature').to.equal(true);
    const nonCanonical = Buffer.from(sig);
    let v = bumped;
    for (let i = 32; i < 64; i++) { nonCanonical[i] = Number(v & 0xffn); v >>= 8n; }
    const withSig = (text: string) => ({ ...req, headers: { ...req.headers, 'x-troupe-request-signature': text } });
    expect(refusal(withSig(nonCanonical.toString('base64')))).to.equal('AUTH_INVALID');
    expect(refusal(withSig(sig.subarray(0, 63).toString('base64')))).to.equal('AUTH_INVALID');
    expect(refusal(withSig(Buffer.concat([sig, Buffer.from([0])]).toString('base64')))).to.equal('AUTH_INVALID');
    const text = sig.toString('base64');
    expect(refusal(withSig(text.replace(/==$/, '')))).to.equal('AUTH_INVALID');
    expect(refusal(withSig(` ${text}`))).to.equal('AUTH_INVALID');
    const urlSafe = text.replace(/\+/g, '-').replace(/\//g, '_');
    if (urlSafe !== text) expect(refusal(withSig(urlSafe))).to.equal('AUTH_INVALID');
    // A last character whose unused low bits are set decodes to the same bytes in lenient decoders; strict refuses it.
    const last = text[text.length - 3]!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const sloppy = `${text.slice(0, -3)}${alphabet[alphabet.indexOf(last) ^ 1]!}==`;
    expect(Buffer.from(sloppy, 'base64').equals(sig), 'a lenient decoder reads the same bytes').to.equal(true);
    expect(refusal(withSig(sloppy))).to.equal('AUTH_INVALID');
  });

  it('missing headers are AUTH_MISSING; malformed timestamp or nonce AUTH_INVALID', () => {
    const req = signedRequest();
    const without = (name: string) => ({ ...req, headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== name)) });
    expect(refusal(without('x-troupe-request-nonce'))).to.equal('AUTH_MISSING');
    expect(refusal(without('x-troupe-request-signature'))).to.equal('AUTH_MISSING');
    expect(refusal(without('x-troupe-request-timestamp'))).to.equal('AUTH_MISSING');
    for (const [name, value] of [
      ['x-troupe-request-timestamp', '-1'], ['x-troupe-request-timestamp', '1e9'], ['x-troupe-request-timestamp', ` ${nowSeconds}`],
      ['x-troupe-request-nonce', 'short'], ['x-troupe-request-nonce', 'has space in the nonce!'], ['x-troupe-request-nonce', 'x'.repeat(129)],
    ] as const) {
      expect(refusal({ ...req, headers: { ...req.headers, [name]: value } }), `${name}=${value}`).to.equal('AUTH_INVALID');
    }
  });

  it('decodes strict standard base64 only', () => {
    const key = Buffer.from(vector1.public, 'hex');
    expect(decodeStrictBase64(key.toString('base64'), 32)?.equals(key)).to.equal(true);
    expect(decodeStrictBase64(key.toString('base64').slice(0, 43), 32)).to.equal(undefined);
    expect(decodeStrictBase64(key.subarray(0, 31).toString('base64'), 32)).to.equal(undefined);
    const text = key.toString('base64');
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const sloppy = `${text.slice(0, 42)}${alphabet[alphabet.indexOf(text[42]!) ^ 1]!}=`;
    expect(Buffer.from(sloppy, 'base64').equals(key)).to.equal(true);
    expect(decodeStrictBase64(sloppy, 32)).to.equal(undefined);
    expect(decodeStrictBase64(text.replace('=', ''), 32)).to.equal(undefined);
    expect(decodeStrictBase64(`${text}\n`, 32)).to.equal(undefined);
  });
});
