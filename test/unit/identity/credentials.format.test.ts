/**
 * Invariant: minted secrets have the documented shape and are stored only as a SHA-256 with their lookup prefix;
 * user/runtime JWTs verify only with our Ed25519 key, unexpired, of the accepted typ (alg none, HS256 and
 * tampered signatures refused); passwords verify only with the right password and never throw on junk.
 */
import { expect } from 'chai';
import { createHash, createHmac } from 'node:crypto';
import { SignJWT, UnsecuredJWT } from 'jose';
import { generateMasterKey } from '../../../ops/secrets.js';
import { Secrets } from '../../../ops/kernel/secrets.js';
import {
  apiKeyPrefix, hashesEqual, mintSecret, parseSecret, randomBase62, registrationTokenPrefix,
} from '../../../actors/services/identity/secrets-format.js';
import { deriveSigningKeys, signToken, verifyToken, USER_TOKEN_TTL_SECONDS } from '../../../actors/services/identity/tokens.js';
import { hashPassword, verifyPassword } from '../../../actors/services/identity/passwords.js';

const ORG = '11111111-1111-4111-8111-111111111111';
const USER = '22222222-2222-4222-8222-222222222222';

async function rejectsInvalid(promise: Promise<unknown>): Promise<void> {
  try {
    await promise;
  } catch (err) {
    expect((err as { code?: string }).code).to.equal('AUTH_INVALID');
    return;
  }
  expect.fail('expected AUTH_INVALID');
}

describe('credential formats', () => {
  it('API keys are trp_ + 40 base62, hashed with SHA-256 and an 8-character lookup prefix', () => {
    const key = mintSecret(apiKeyPrefix);
    expect(key.full).to.match(/^trp_[0-9A-Za-z]{40}$/);
    expect(key.lookupPrefix).to.equal(key.full.slice(4, 12));
    expect(key.hash).to.equal(createHash('sha256').update(key.full).digest('hex'));
    expect(parseSecret(apiKeyPrefix, key.full)).to.deep.equal({ lookupPrefix: key.lookupPrefix, hash: key.hash });
    expect(mintSecret(registrationTokenPrefix).full).to.match(/^trg_[0-9A-Za-z]{40}$/);
  });

  it('refuses secrets of the wrong shape before any lookup', () => {
    const key = mintSecret(apiKeyPrefix).full;
    for (const bad of [key.slice(0, -1), `${key}x`, key.replace('trp_', 'trg_'), `${key.slice(0, -1)}!`, 'trp_', '']) {
      expect(parseSecret(apiKeyPrefix, bad), bad).to.equal(undefined);
    }
  });

  it('base62 is uniform enough that every character appears at a fair rate', () => {
    const counts = new Map<string, number>();
    const sample = randomBase62(62 * 400);
    for (const c of sample) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).to.equal(62);
    // Expected 400 each; modulo bias would push the first 8 characters ~25 % high.
    for (const [c, n] of counts) expect(n, c).to.be.within(280, 520);
  });

  it('compares hashes without short-circuiting on length or content', () => {
    const a = 'a'.repeat(64);
    expect(hashesEqual(a, a)).to.equal(true);
    expect(hashesEqual(a, `${'a'.repeat(63)}b`)).to.equal(false);
    expect(hashesEqual(a, 'a')).to.equal(false);
  });
});

describe('JWTs', () => {
  const secrets = Secrets.fromBase64(generateMasterKey());
  const keys = deriveSigningKeys(secrets);
  let now = Date.UTC(2025, 0, 1);
  const clock = { now: () => now };
  beforeEach(() => { now = Date.UTC(2025, 0, 1); });

  it('derives the same key pair from the same master key on every node', async () => {
    const again = deriveSigningKeys(secrets);
    const { token } = await signToken(keys, clock, 'user', { sub: USER, org: ORG });
    expect((await verifyToken(again, clock, token, ['user'])).claims).to.deep.equal({ sub: USER, org: ORG });
    const other = deriveSigningKeys(Secrets.fromBase64(generateMasterKey()));
    await rejectsInvalid(verifyToken(other, clock, token, ['user']));
  });

  it('user tokens last 12 hours by the injected clock', async () => {
    const { token, expiresAt } = await signToken(keys, clock, 'user', { sub: USER, org: ORG });
    expect(expiresAt - now).to.equal(USER_TOKEN_TTL_SECONDS * 1000);
    now += USER_TOKEN_TTL_SECONDS * 1000 - 1000;
    expect((await verifyToken(keys, clock, token, ['user'])).typ).to.equal('user');
    now += 2000;
    await rejectsInvalid(verifyToken(keys, clock, token, ['user']));
  });

  it('runtime tokens carry worker, org, projects, registration and scopes for 15 minutes', async () => {
    const claims = { wid: 'w-1', org: ORG, prj: [USER], reg: 'reg-1', scope: ['report'] };
    const { token, expiresAt } = await signToken(keys, clock, 'runtime', claims);
    expect(expiresAt - now).to.equal(15 * 60 * 1000);
    expect((await verifyToken(keys, clock, token, ['runtime'])).claims).to.deep.equal(claims);
    await rejectsInvalid(verifyToken(keys, clock, token, ['user']));
  });

  it('refuses a user token where only runtime tokens are accepted', async () => {
    const { token } = await signToken(keys, clock, 'user', { sub: USER, org: ORG });
    await rejectsInvalid(verifyToken(keys, clock, token, ['runtime']));
  });

  it('refuses a tampered payload or signature', async () => {
    const { token } = await signToken(keys, clock, 'user', { sub: USER, org: ORG });
    const [h, p, s] = token.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), org: USER })).toString('base64url');
    await rejectsInvalid(verifyToken(keys, clock, `${h}.${forged}.${s}`, ['user']));
    const flipped = `${s.slice(0, -2)}${s.at(-2) === 'A' ? 'B' : 'A'}${s.slice(-1)}`;
    await rejectsInvalid(verifyToken(keys, clock, `${h}.${p}.${flipped}`, ['user']));
  });

  it('refuses alg none and HS256 tokens (algorithm confusion)', async () => {
    const payload = { sub: USER, org: ORG, typ: 'user', iss: 'troupe' };
    const unsecured = new UnsecuredJWT(payload).setIssuedAt(now / 1000).setExpirationTime(now / 1000 + 60).encode();
    await rejectsInvalid(verifyToken(keys, clock, unsecured, ['user']));
    const publicDer = keys.publicKey.export({ format: 'der', type: 'spki' });
    const hs = await new SignJWT(payload).setProtectedHeader({ alg: 'HS256' }).setIssuedAt(now / 1000).setExpirationTime(now / 1000 + 60)
      .sign(new Uint8Array(publicDer));
    await rejectsInvalid(verifyToken(keys, clock, hs, ['user']));
    // A hand-built HS256 token keyed with the raw public key, the classic confusion attack.
    const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
    const body = Buffer.from(JSON.stringify({ ...payload, iat: now / 1000, exp: now / 1000 + 60 })).toString('base64url');
    const mac = createHmac('sha256', publicDer).update(`${header}.${body}`).digest('base64url');
    await rejectsInvalid(verifyToken(keys, clock, `${header}.${body}.${mac}`, ['user']));
  });

  it('refuses a validly signed token whose claims are malformed', async () => {
    const { token } = await signToken(keys, clock, 'user', { sub: 'not-a-uuid', org: ORG });
    await rejectsInvalid(verifyToken(keys, clock, token, ['user']));
  });
});

describe('passwords', () => {
  it('verify only the right password; hashes are salted', async () => {
    const a = await hashPassword('correct horse');
    const b = await hashPassword('correct horse');
    expect(a).to.not.equal(b);
    expect(a).to.match(/^scrypt\$32768\$8\$1\$/);
    expect(await verifyPassword('correct horse', a)).to.equal(true);
    expect(await verifyPassword('correct horsf', a)).to.equal(false);
  });
  it('treat junk and absurd cost parameters in a stored value as a mismatch', async () => {
    for (const junk of ['', 'plain', 'scrypt$1$1$1$x$y', 'scrypt$99999999$8$1$AAAA$AAAAAAAAAAAAAAAAAAAAAAAA', 'bcrypt$2$3$4$5$6']) {
      expect(await verifyPassword('x', junk), junk).to.equal(false);
    }
  });
});

describe('revocable memo', () => {
  it('refuses to keep a lookup that was in flight when a revocation of its tag arrived', async () => {
    const { RevocableMemo } = await import('../../../actors/services/identity/memo.js');
    const memo = new RevocableMemo<string>(10, 10);
    const started = memo.begin();
    memo.revoke(['apiKey:1']);
    memo.set('k', 'principal', Date.now() + 60_000, ['apiKey:1'], started);
    expect(memo.get('k', Date.now())).to.equal(undefined);
    // A lookup begun after the revocation is memoised normally.
    memo.set('k', 'principal', Date.now() + 60_000, ['apiKey:1'], memo.begin());
    expect(memo.get('k', Date.now())).to.equal('principal');
  });
  it('evicts the least recently used entry beyond its bound', async () => {
    const { RevocableMemo } = await import('../../../actors/services/identity/memo.js');
    const memo = new RevocableMemo<number>(2, 10);
    const far = Date.now() + 60_000;
    memo.set('a', 1, far, [], memo.begin());
    memo.set('b', 2, far, [], memo.begin());
    memo.get('a', Date.now());
    memo.set('c', 3, far, [], memo.begin());
    expect([memo.get('a', Date.now()), memo.get('b', Date.now()), memo.get('c', Date.now())]).to.deep.equal([1, undefined, 3]);
  });
});
