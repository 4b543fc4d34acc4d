/**
 * Invariant: the synchronous first-sight verifier (node:crypto Ed25519, used by the authenticator on the heartbeat
 * path) accepts exactly what we sign and nothing else: alg none, HS256 keyed with our public key, an EdDSA header
 * carrying extra parameters (kid, jwk, crit, b64), another header typ, a signature moved onto another payload,
 * a re-spelt (non-canonical) or truncated signature, a foreign key, a wrong issuer, and expiry are all AUTH_INVALID.
 */
import { expect } from 'chai';
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { generateMasterKey } from '../../../ops/secrets.js';
import { Secrets } from '../../../ops/kernel/secrets.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { deriveSigningKeys, signToken, userTokenId, verifyTokenSync, RUNTIME_TOKEN_TTL_SECONDS, type SigningKeys } from '../../../actors/services/identity/tokens.js';

const ORG = '11111111-1111-4111-8111-111111111111';
const claims = { wid: 'w-1', org: ORG, prj: ['p-1'], reg: '33333333-3333-4333-8333-333333333333', scope: ['daemon'] };
const keys = deriveSigningKeys(Secrets.fromBase64(generateMasterKey()));
let now = Date.UTC(2025, 0, 1);
const clock = { now: () => now };
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function refused(token: string, signingKeys: SigningKeys = keys): void {
  try {
    verifyTokenSync(signingKeys, clock, token, ['runtime']);
  } catch (err) {
    expect(err).to.be.instanceOf(TroupeError);
    expect((err as TroupeError).code).to.equal('AUTH_INVALID');
    return;
  }
  expect.fail(`accepted ${token}`);
}

/** Signs any header and payload with our real private key, as an attacker who could choose the header cannot. */
function signedWith(header: Record<string, unknown>, payload: Record<string, unknown>): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${sign(null, Buffer.from(input), keys.privateKey).toString('base64url')}`;
}

const payload = (extra: Record<string, unknown> = {}) => ({
  ...claims, typ: 'runtime', iss: 'troupe', iat: now / 1000, exp: now / 1000 + 60, ...extra,
});

describe('verifyTokenSync', () => {
  beforeEach(() => { now = Date.UTC(2025, 0, 1); });

  it('accepts our runtime token until it expires, with its claims and expiry', async () => {
    const { token, expiresAt } = await signToken(keys, clock, 'runtime', claims);
    const verified = verifyTokenSync(keys, clock, token, ['runtime']);
    expect(verified).to.deep.equal({ typ: 'runtime', claims, expiresAt });
    now += RUNTIME_TOKEN_TTL_SECONDS * 1000;
    refused(token);
  });

  it('refuses alg none and HS256 keyed with our public key', () => {
    refused(`${b64({ alg: 'none' })}.${b64(payload())}.`);
    const publicDer = keys.publicKey.export({ format: 'der', type: 'spki' });
    for (const header of [{ alg: 'HS256', typ: 'JWT' }, { alg: 'HS512' }]) {
      const input = `${b64(header)}.${b64(payload())}`;
      refused(`${input}.${createHmac('sha256', publicDer).update(input).digest('base64url')}`);
    }
    // An EdDSA-length MAC behind an HS header is still refused before any signature work.
    const input = `${b64({ alg: 'HS256' })}.${b64(payload())}`;
    refused(`${input}.${createHmac('sha512', publicDer).update(input).digest('base64url')}`);
  });

  it('refuses an EdDSA header that carries anything but typ JWT, even when our key signed it', () => {
    expect(verifyTokenSync(keys, clock, signedWith({ alg: 'EdDSA' }, payload()), ['runtime']).typ).to.equal('runtime');
    for (const header of [
      { alg: 'EdDSA', typ: 'runtime' }, { alg: 'EdDSA', kid: 'x' }, { alg: 'EdDSA', crit: ['b64'], b64: false },
      { alg: 'EdDSA', jwk: { kty: 'OKP' } }, { alg: 'eddsa' }, { alg: ['EdDSA'] },
    ]) refused(signedWith(header, payload()));
  });

  it('refuses tampered payloads, moved, re-spelt or truncated signatures and foreign keys', async () => {
    const { token } = await signToken(keys, clock, 'runtime', claims);
    const [h, p, s] = token.split('.') as [string, string, string];
    refused(`${h}.${b64({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), wid: 'w-2' })}.${s}`);
    const { token: other } = await signToken(keys, clock, 'runtime', { ...claims, wid: 'w-2' });
    refused(`${h}.${other.split('.')[1]!}.${s}`);
    // The last character of 64 bytes in base64url carries 4 spare bits: another spelling of the same bytes.
    const last = s.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelt = alphabet[(alphabet.indexOf(last) & ~3) | ((alphabet.indexOf(last) + 1) & 3)]!;
    refused(`${h}.${p}.${s.slice(0, -1)}${respelt}`);
    refused(`${h}.${p}.${s.slice(0, -2)}`);
    refused(`${h}.${p}.${s}.`);
    refused(`${h}.${p}`);
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    refused(token, { publicKey, privateKey });
  });

  it('refuses a wrong issuer, a missing iat or exp, a not-yet-valid token and junk', () => {
    refused(signedWith({ alg: 'EdDSA' }, payload({ iss: 'someone-else' })));
    refused(signedWith({ alg: 'EdDSA' }, { ...payload(), exp: undefined }));
    refused(signedWith({ alg: 'EdDSA' }, { ...payload(), iat: undefined }));
    refused(signedWith({ alg: 'EdDSA' }, payload({ exp: now / 1000 })));
    refused(signedWith({ alg: 'EdDSA' }, payload({ nbf: now / 1000 + 30 })));
    refused(signedWith({ alg: 'EdDSA' }, payload({ typ: 'user' })));
    for (const junk of ['', '...', 'a.b.c', `${b64([1])}.${b64(payload())}.${'A'.repeat(86)}`]) refused(junk);
  });

  it('gives every user token its own jti (its session id for logout), and falls back to a digest for one without', async () => {
    const user = { sub: '22222222-2222-4222-8222-222222222222', org: ORG };
    const [a, b] = [await signToken(keys, clock, 'user', user), await signToken(keys, clock, 'user', user)];
    const [va, vb] = [verifyTokenSync(keys, clock, a.token, ['user']), verifyTokenSync(keys, clock, b.token, ['user'])];
    expect(va.jti).to.match(/^[A-Za-z0-9_-]{22}$/);
    expect(va.jti).to.not.equal(vb.jti);
    expect(userTokenId(a.token, va)).to.equal(va.jti);
    const userPayload = { ...user, typ: 'user', iss: 'troupe', iat: now / 1000, exp: now / 1000 + 60 };
    const older = signedWith({ alg: 'EdDSA' }, userPayload);
    const vo = verifyTokenSync(keys, clock, older, ['user']);
    expect(vo.jti).to.equal(undefined);
    expect(userTokenId(older, vo)).to.match(/^sha256:[A-Za-z0-9_-]{43}$/);
    expect(userTokenId(signedWith({ alg: 'EdDSA' }, { ...userPayload, iat: userPayload.iat - 1 }), vo)).to.not.equal(userTokenId(older, vo));
    for (const jti of [42, '', 'x'.repeat(65), 'a b']) {
      expect(() => verifyTokenSync(keys, clock, signedWith({ alg: 'EdDSA' }, { ...userPayload, jti }), ['user'])).to.throw(TroupeError);
    }
  });
});
