/**
 * Invariant: through the real HTTP server, logout ends the user session it is called with — the same token is then
 * refused as cookie and as bearer, at once even where it was memoised, on every node of a cluster and after a
 * restart — while the user's other sessions, other users and other credentials keep working; logout with nothing
 * valid presented still answers 200 and clears the cookie, ending nothing.
 */
import { expect } from 'chai';
import { sign } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../ops/config.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { Secrets } from '../../../ops/kernel/secrets.js';
import { deriveSigningKeys } from '../../../actors/services/identity/tokens.js';
import { startNode, type TroupeNode } from '../../../ops/node.js';
import { AmqpTransport } from '../../../transport/amqp/index.js';
import { call, engineSets, startTestNode, type CallInit, type EngineSet, type TestNode } from '../../support/node.js';
import { withPostgresSchema, type TestDb } from '../../support/db.js';
import { engines, skipEngine } from '../../support/engines.js';
import { deleteBrokerTopology, eventually, testPrefix } from '../../support/transport.js';

const PASSWORD = 'correct horse battery';
const bearer = (token: string): CallInit => ({ token });
const cookie = (token: string): CallInit => ({ headers: { cookie: `theme=dark; troupe_session=${token}` } });

interface Session { readonly token: string; readonly setCookie: string }

async function provision(url: string, adminToken: string, name: string, email: string) {
  const r = await call(url, 'POST', '/api/admin/orgs', { token: adminToken, body: { name, owner: { email, password: PASSWORD } } });
  expect(r.status, r.text).to.equal(201);
  return r.json as { org: { id: string }; owner: { id: string }; userToken: string; apiKey: { fullKey: string } };
}

async function login(url: string, email: string): Promise<Session> {
  const r = await call(url, 'POST', '/api/auth/login', { body: { email, password: PASSWORD } });
  expect(r.status, r.text).to.equal(200);
  return { token: r.json.userToken as string, setCookie: r.headers.get('set-cookie') ?? '' };
}

async function whoami(url: string, init: CallInit): Promise<number> {
  return (await call(url, 'GET', '/api/cli/whoami', init)).status;
}

async function logout(url: string, init: CallInit = {}) {
  const r = await call(url, 'POST', '/api/auth/logout', init);
  expect(r.status, r.text).to.equal(200);
  expect(r.json).to.deep.equal({ ok: true });
  expect(r.headers.get('set-cookie')).to.match(/^troupe_session=; .*Max-Age=0/);
  return r;
}

for (const { set, skip } of engineSets) describe(`logout (${set} engines, real HTTP)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let node: TestNode;
  let acme: Awaited<ReturnType<typeof provision>>;
  let globex: Awaited<ReturnType<typeof provision>>;

  before(async () => {
    node = await startTestNode({ engines: set });
    acme = await provision(node.url, node.adminToken, 'Acme', 'owner@acme.test');
    globex = await provision(node.url, node.adminToken, 'Globex', 'owner@globex.test');
  });
  after(() => node?.close());

  it('with the session cookie: that token is refused afterwards as cookie and as bearer, with AUTH_INVALID', async () => {
    const session = await login(node.url, 'owner@acme.test');
    expect(session.setCookie).to.contain(`troupe_session=${session.token};`);
    expect(await whoami(node.url, cookie(session.token))).to.equal(200);
    await logout(node.url, cookie(session.token));
    const refused = await call(node.url, 'GET', '/api/cli/whoami', cookie(session.token));
    expect([refused.status, refused.json?.code]).to.deep.equal([401, 'AUTH_INVALID']);
    expect(await whoami(node.url, bearer(session.token))).to.equal(401);
  });

  it('with a bearer token memoised by earlier use: refused right after, while the user\'s other sessions keep working', async () => {
    const first = await login(node.url, 'owner@acme.test');
    const second = await login(node.url, 'owner@acme.test');
    expect(await whoami(node.url, bearer(first.token))).to.equal(200);
    expect(await whoami(node.url, cookie(first.token))).to.equal(200);
    await logout(node.url, bearer(first.token));
    expect(await whoami(node.url, bearer(first.token))).to.equal(401);
    expect(await whoami(node.url, cookie(first.token))).to.equal(401);
    expect(await whoami(node.url, bearer(second.token)), 'a second login').to.equal(200);
    expect(await whoami(node.url, cookie(second.token))).to.equal(200);
    expect(await whoami(node.url, bearer(acme.userToken)), 'the token issued with the org').to.equal(200);
    const third = await login(node.url, 'owner@acme.test');
    expect(await whoami(node.url, bearer(third.token)), 'logging in again after logout').to.equal(200);
  });

  it('ends both user tokens when a bearer and a cookie are presented together, and nobody else\'s', async () => {
    const viaBearer = await login(node.url, 'owner@acme.test');
    const viaCookie = await login(node.url, 'owner@acme.test');
    const bystander = await login(node.url, 'owner@globex.test');
    await logout(node.url, { token: viaBearer.token, headers: cookie(viaCookie.token).headers! });
    expect(await whoami(node.url, bearer(viaBearer.token))).to.equal(401);
    expect(await whoami(node.url, bearer(viaCookie.token))).to.equal(401);
    expect(await whoami(node.url, bearer(bystander.token)), 'another user in another org').to.equal(200);
    expect(await whoami(node.url, bearer(globex.userToken))).to.equal(200);
  });

  it('without a valid user token answers 200, clears the cookie and ends nothing', async () => {
    const kept = await login(node.url, 'owner@acme.test');
    await logout(node.url);
    await logout(node.url, cookie('abc.def.ghi'));
    await logout(node.url, bearer('not-a-token'));
    await logout(node.url, { headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    // A key is not a session: logging out with one leaves it working.
    await logout(node.url, bearer(acme.apiKey.fullKey));
    expect(await whoami(node.url, bearer(acme.apiKey.fullKey))).to.equal(200);
    // A body naming someone else's token is not read: only what the caller presents as its credential counts.
    await logout(node.url, { rawBody: JSON.stringify({ userToken: kept.token }), headers: { 'content-type': 'application/json' } });
    expect(await whoami(node.url, bearer(kept.token))).to.equal(200);
    // Logging out again with an ended token changes nothing and is still 200.
    await logout(node.url, bearer(kept.token));
    await logout(node.url, bearer(kept.token));
    expect(await whoami(node.url, bearer(kept.token))).to.equal(401);
    expect(await whoami(node.url, bearer(acme.userToken))).to.equal(200);
  });

  /** A user token of Acme's owner signed with the node's own key, with whatever extra claims a test needs. */
  function signedUserToken(extra: Record<string, unknown> = {}): string {
    const keys = deriveSigningKeys(Secrets.fromBase64(node.config.masterKey!));
    const seconds = Math.floor(Date.now() / 1000);
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const input = `${b64({ alg: 'EdDSA', typ: 'JWT' })}.${b64({ sub: acme.owner.id, org: acme.org.id, typ: 'user', iss: 'troupe', iat: seconds, exp: seconds + 600, ...extra })}`;
    return `${input}.${sign(null, Buffer.from(input), keys.privateKey).toString('base64url')}`;
  }

  it('ends a user token signed before user tokens carried a jti', async () => {
    const older = signedUserToken();
    expect(await whoami(node.url, cookie(older))).to.equal(200);
    await logout(node.url, cookie(older));
    expect(await whoami(node.url, cookie(older))).to.equal(401);
    expect(await whoami(node.url, bearer(acme.userToken))).to.equal(200);
  });
  it('answers 200 and ends nothing for hostile credentials: a jti that is not a short string, a huge bearer, junk cookies', async () => {
    const kept = await login(node.url, 'owner@acme.test');
    for (const jti of [42, null, ['a'], { id: 'a' }, '', 'a'.repeat(65), 'has space', `sha256:${'a'.repeat(43)}`]) {
      const odd = signedUserToken({ jti });
      expect(await whoami(node.url, bearer(odd)), JSON.stringify(jti)).to.equal(401);
      await logout(node.url, bearer(odd));
      await logout(node.url, cookie(odd));
    }
    const huge = `${kept.token.split('.')[0]}.${'A'.repeat(12_000)}.${kept.token.split('.')[2]}`;
    await logout(node.url, bearer(huge));
    for (const header of ['troupe_session', 'troupe_session=', 'troupe_session="', '=;;=; troupe_session=%E0%A4%A', `troupe_session="${kept.token}`, 'troupe_session=a.b.c.d']) {
      await logout(node.url, { headers: { cookie: header } });
    }
    await logout(node.url, { headers: { authorization: 'Bearer' } });
    await logout(node.url, { headers: { authorization: `Bearer ${kept.token} extra` } });
    expect(await whoami(node.url, bearer(kept.token)), 'none of these ended the real session').to.equal(200);
  });
});

/** Boots whole nodes on one storage (and, for 'real', one broker prefix), so a restart and a second node share it. */
function cluster(set: EngineSet) {
  const adminToken = generateAdminToken();
  const masterKey = generateMasterKey();
  const prefix = testPrefix();
  const running = new Set<TroupeNode>();
  const stopped: AmqpTransport[] = [];
  let dataDir = '';
  let db: TestDb | undefined;
  return {
    adminToken,
    async open() {
      if (set === 'real') db = await withPostgresSchema('logout');
      else dataDir = await mkdtemp(path.join(tmpdir(), 'troupe-logout-'));
    },
    async boot(): Promise<TroupeNode> {
      const env: NodeJS.ProcessEnv = set === 'real' ? { DATABASE_URL: engines.postgres, AMQP_URL: engines.amqp } : {};
      const node = await startNode(loadConfig(env, {
        port: 0, host: '127.0.0.1', nodeId: `${prefix}-${running.size + 1}`, masterKey, adminToken, logLevel: 'silent', shardCount: 4,
        ...(set === 'embedded' ? { dataDir } : {}),
      }), { log: silentLogger(), ...(db ? { searchPath: db.schema, transportPrefix: prefix } : {}) });
      running.add(node);
      return node;
    },
    async stop(node: TroupeNode) {
      running.delete(node);
      const transport = node.deps.transport;
      if (transport instanceof AmqpTransport) stopped.push(transport);
      await node.close();
    },
    async close() {
      for (const node of [...running].reverse()) await this.stop(node);
      // Only once no node runs: the shard queues are shared by the prefix, and deleting them under a running node
      // crashes its channels on the broker in a loop (see m2m-clients.revocation.cluster.test.ts).
      for (const transport of stopped) await deleteBrokerTopology(transport);
      await db?.drop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

for (const { set, skip } of engineSets) describe(`logout survives a restart (${set === 'embedded' ? 'PGlite on disk' : 'Postgres, RabbitMQ'})`, function () {
  if (skip) return;
  this.timeout(120_000);
  const nodes = cluster(set);
  before(() => nodes.open());
  after(() => nodes.close());

  it('a token logged out before the restart is refused after it; another session still works', async () => {
    let node = await nodes.boot();
    await provision(node.url, nodes.adminToken, 'Acme', 'owner@acme.test');
    const ended = await login(node.url, 'owner@acme.test');
    const kept = await login(node.url, 'owner@acme.test');
    expect(await whoami(node.url, bearer(ended.token))).to.equal(200);
    await logout(node.url, cookie(ended.token));
    await nodes.stop(node);

    node = await nodes.boot();
    expect(await whoami(node.url, bearer(ended.token))).to.equal(401);
    expect(await whoami(node.url, cookie(ended.token))).to.equal(401);
    expect(await whoami(node.url, bearer(kept.token))).to.equal(200);
  });
});

describe('logout across two nodes (Postgres, RabbitMQ)', function () {
  if (skipEngine.postgres || skipEngine.amqp) return;
  this.timeout(120_000);
  const nodes = cluster('real');
  before(() => nodes.open());
  after(() => nodes.close());

  it('the other node drops its memoised token when the revocation arrives, and refuses a token it never saw', async () => {
    const a = await nodes.boot();
    const b = await nodes.boot();
    await provision(a.url, nodes.adminToken, 'Acme', 'owner@acme.test');
    const memoised = await login(a.url, 'owner@acme.test');
    const unseen = await login(a.url, 'owner@acme.test');
    const kept = await login(a.url, 'owner@acme.test');
    expect(await whoami(b.url, bearer(memoised.token))).to.equal(200);
    expect(await whoami(b.url, cookie(memoised.token))).to.equal(200);
    expect(await whoami(b.url, bearer(kept.token))).to.equal(200);

    await logout(a.url, bearer(memoised.token));
    await logout(a.url, cookie(unseen.token));
    expect(await whoami(a.url, bearer(memoised.token)), 'the node that logged out refuses before it answers').to.equal(401);
    await eventually(async () => (await whoami(b.url, bearer(memoised.token))) === 401, 'the other node to drop its memoised token');
    expect(await whoami(b.url, cookie(memoised.token))).to.equal(401);
    expect(await whoami(b.url, bearer(unseen.token)), 'a token the other node never saw').to.equal(401);
    expect(await whoami(b.url, bearer(kept.token)), 'another session of the same user').to.equal(200);
  });
});
