/**
 * Invariant: the authenticator answers repeat credentials from its memo without touching storage, yet a revoked
 * key or a changed membership stops working at once on the revoking node and, through `identity.revoked`, on
 * every other node; expired tokens are refused even when memoised. Runs on PGlite and Postgres, and across two
 * nodes on the local transport and on RabbitMQ.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { dbEngines, type TestDb } from '../../support/db.js';
import { startAmqpTransport, startLocalTransport, testPrefix, eventually, type StartedTransport } from '../../support/transport.js';
import { skipEngine } from '../../support/engines.js';
import { generateMasterKey } from '../../../ops/secrets.js';
import { Secrets } from '../../../ops/kernel/secrets.js';
import { createAuthenticator, type IdentityAuthenticator } from '../../../actors/services/identity/authenticator.js';
import { deriveSigningKeys, signToken } from '../../../actors/services/identity/tokens.js';
import { apiKeyPrefix, mintSecret } from '../../../actors/services/identity/secrets-format.js';
import { publishRevocation, tags } from '../../../actors/services/identity/revocation.js';
import { ensureUser, insertOrg, setOrgRole } from '../../../storage/identity/orgs.js';
import { markApiKeyRevoked, writeApiKey } from '../../../storage/identity/credentials.js';

const keys = deriveSigningKeys(Secrets.fromBase64(generateMasterKey()));
const noDelivery = async () => { throw new Error('no actors here'); };

async function seed(db: Knex) {
  const org = await insertOrg(db, { id: randomUUID(), name: 'Acme', slug: `acme-${randomUUID().slice(0, 8)}`, plan: 'free' });
  const { user } = await ensureUser(db, { id: randomUUID(), email: `${randomUUID()}@acme.test` });
  await setOrgRole(db, org.id, user.id, 'admin');
  const secret = mintSecret(apiKeyPrefix);
  const keyId = randomUUID();
  await writeApiKey(db, org.id, { id: keyId, name: 'ci', prefix: secret.lookupPrefix, hash: secret.hash, scopes: ['write'], requesterId: null, createdBy: user.id, createdAt: Date.now(), revokedAt: null });
  return { orgId: org.id, userId: user.id, keyId, fullKey: secret.full };
}

/** Counts queries knex sends, so a memo hit can be told from a lookup. */
function queryCounter(db: Knex): { readonly count: number } {
  const counter = { count: 0 };
  db.on('query', () => { counter.count += 1; });
  return counter;
}

for (const engine of dbEngines) {
  describe(`authenticator on ${engine.name}`, function () {
    if (engine.skip) return;
    this.timeout(30_000);
    let db: TestDb;
    let now = Date.now();
    const clock = { now: () => now };
    let auth: IdentityAuthenticator;
    before(async () => { db = await engine.open('authn'); });
    after(() => db?.drop());
    beforeEach(() => {
      now = Date.now();
      auth = createAuthenticator({ db: db.knex, keys, clock });
    });
    afterEach(() => auth.close());

    it('resolves API keys, user tokens and the session cookie; memo hits skip storage', async () => {
      const s = await seed(db.knex);
      const counter = queryCounter(db.knex);
      expect(await auth.resolve({ authorization: `Bearer ${s.fullKey}` })).to.deep.equal({ kind: 'apiKey', keyId: s.keyId, orgId: s.orgId, scopes: ['write'] });
      const afterFirst = counter.count;
      expect(afterFirst).to.be.greaterThan(0);
      await auth.resolve({ authorization: `bearer ${s.fullKey}` });
      expect(counter.count).to.equal(afterFirst);
      const { token } = await signToken(keys, clock, 'user', { sub: s.userId, org: s.orgId });
      expect(await auth.resolve({ authorization: `Bearer ${token}` })).to.deep.equal({ kind: 'user', userId: s.userId, orgId: s.orgId, orgRole: 'admin', via: 'token' });
      expect(await auth.resolve({ cookie: `a=b; troupe_session=${token}` })).to.deep.include({ via: 'cookie' });
      expect(await auth.resolve({})).to.equal(undefined);
      expect(await auth.resolve({ cookie: 'a=b' })).to.equal(undefined);
    });

    it('refuses other schemes, garbage, unknown keys and non-members with AUTH_INVALID', async () => {
      const s = await seed(db.knex);
      const stranger = await signToken(keys, clock, 'user', { sub: randomUUID(), org: s.orgId });
      for (const authorization of ['Basic Zm9vOmJhcg==', 'Bearer', 'Bearer a.b.c', `Bearer ${mintSecret(apiKeyPrefix).full}`, `Bearer ${s.fullKey}x`, `Bearer ${stranger.token}`]) {
        try {
          await auth.resolve({ authorization });
          expect.fail(`accepted ${authorization}`);
        } catch (err) {
          expect((err as { code?: string }).code, authorization).to.equal('AUTH_INVALID');
        }
      }
    });

    it('a memoised token is refused once it expires', async () => {
      const s = await seed(db.knex);
      const { token } = await signToken(keys, clock, 'user', { sub: s.userId, org: s.orgId }, 60);
      await auth.resolve({ authorization: `Bearer ${token}` });
      now += 61_000;
      const refused = await auth.resolve({ authorization: `Bearer ${token}` }).then(() => false, () => true);
      expect(refused).to.equal(true);
    });

    it('local invalidation ends a memoised key and a memoised role at once', async () => {
      const s = await seed(db.knex);
      await auth.resolve({ authorization: `Bearer ${s.fullKey}` });
      await markApiKeyRevoked(db.knex, s.orgId, s.keyId, Date.now());
      auth.invalidate([tags.apiKey(s.keyId)]);
      expect(await auth.resolve({ authorization: `Bearer ${s.fullKey}` }).then(() => 'accepted', () => 'refused')).to.equal('refused');

      const { token } = await signToken(keys, clock, 'user', { sub: s.userId, org: s.orgId });
      await auth.resolve({ authorization: `Bearer ${token}` });
      await setOrgRole(db.knex, s.orgId, s.userId, 'viewer');
      auth.invalidate([tags.member(s.orgId, s.userId)]);
      expect(await auth.resolve({ authorization: `Bearer ${token}` })).to.deep.include({ orgRole: 'viewer' });
    });
  });
}

const transportsForNodes: Array<{ name: string; skip: boolean; start: () => Promise<[StartedTransport, StartedTransport]> }> = [
  {
    name: 'local transport (one bus)', skip: false,
    start: async () => { const t = await startLocalTransport(noDelivery); return [t, { transport: t.transport, close: async () => undefined }]; },
  },
  {
    name: 'RabbitMQ (two nodes)', skip: skipEngine.amqp,
    start: async () => {
      const prefix = testPrefix();
      return [await startAmqpTransport(noDelivery, { prefix }), await startAmqpTransport(noDelivery, { prefix })];
    },
  },
];

for (const bus of transportsForNodes) {
  describe(`revocation across nodes on ${bus.name}`, function () {
    if (bus.skip) return;
    this.timeout(30_000);
    let db: TestDb;
    let transports: [StartedTransport, StartedTransport];
    let nodeA: IdentityAuthenticator;
    let nodeB: IdentityAuthenticator;
    before(async () => {
      db = await dbEngines[0]!.open();
      transports = await bus.start();
      nodeA = createAuthenticator({ db: db.knex, keys, clock: { now: () => Date.now() }, transport: transports[0].transport });
      nodeB = createAuthenticator({ db: db.knex, keys, clock: { now: () => Date.now() }, transport: transports[1].transport });
      await Promise.all([nodeA.ready, nodeB.ready]);
    });
    after(async () => {
      await nodeA?.close();
      await nodeB?.close();
      for (const t of transports ?? []) await t.close();
      await db?.drop();
    });

    it('a key revoked on one node stops on the other', async () => {
      const s = await seed(db.knex);
      await nodeA.resolve({ authorization: `Bearer ${s.fullKey}` });
      await nodeB.resolve({ authorization: `Bearer ${s.fullKey}` });
      await markApiKeyRevoked(db.knex, s.orgId, s.keyId, Date.now());
      nodeA.invalidate([tags.apiKey(s.keyId)]);
      await publishRevocation(transports[0].transport, [tags.apiKey(s.keyId)]);
      await eventually(
        () => nodeB.resolve({ authorization: `Bearer ${s.fullKey}` }).then(() => false, () => true),
        'node B to refuse the revoked key',
      );
      expect(await nodeA.resolve({ authorization: `Bearer ${s.fullKey}` }).then(() => 'accepted', () => 'refused')).to.equal('refused');
    });
  });
}
