// Invariant: revoking a machine client on one node ends the tokens already issued to it on every node of the
// cluster — a node that had the token memoised drops it when `identity.revoked` arrives over RabbitMQ, and a node
// that never saw the token refuses it from storage — while another client's token keeps working everywhere.
import { expect } from 'chai';
import { loadConfig } from '../../../ops/config.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { startNode, type TroupeNode } from '../../../ops/node.js';
import { AmqpTransport } from '../../../transport/amqp/index.js';
import { call } from '../../support/node.js';
import { withPostgresSchema, type TestDb } from '../../support/db.js';
import { engines, skipEngine } from '../../support/engines.js';
import { deleteBrokerTopology, eventually, testPrefix } from '../../support/transport.js';

describe('integrations: machine client revocation across nodes (Postgres, RabbitMQ)', function () {
  if (skipEngine.postgres || skipEngine.amqp) return;
  this.timeout(90_000);
  let db: TestDb;
  const nodes: TroupeNode[] = [];
  const adminToken = generateAdminToken();
  const masterKey = generateMasterKey();
  const prefix = testPrefix();

  const boot = async (): Promise<TroupeNode> => {
    const node = await startNode(loadConfig({ DATABASE_URL: engines.postgres, AMQP_URL: engines.amqp }, {
      port: 0, host: '127.0.0.1', nodeId: `${prefix}-${nodes.length + 1}`, masterKey, adminToken, logLevel: 'silent', shardCount: 4,
    }), { log: silentLogger(), searchPath: db.schema, transportPrefix: prefix });
    nodes.push(node);
    return node;
  };

  before(async () => { db = await withPostgresSchema('m2m_revoke'); });
  after(async () => {
    // Every node closes before the shared shard queues go: deleting them under a node still consuming crashed its
    // channels on the broker (RabbitMQ 3.10, basic.cancel/consume on a queue whose process is gone) in a loop of
    // reconnects whose crash reports stalled the shared broker for minutes.
    const transports = nodes.map((node) => node.deps.transport);
    for (const node of nodes.reverse()) await node.close();
    for (const transport of transports) if (transport instanceof AmqpTransport) await deleteBrokerTopology(transport);
    await db?.drop();
  });

  it('a memoised token is refused on the other node, and a token never seen there too', async () => {
    const a = await boot();
    const b = await boot();
    const org = await call(a.url, 'POST', '/api/admin/orgs', { token: adminToken, body: { name: 'Acme', owner: { email: 'owner@acme.test' } } });
    expect(org.status, org.text).to.equal(201);
    const provision = async (name: string) => {
      const r = await call(a.url, 'POST', '/api/admin/m2m-clients', { token: adminToken, body: { orgId: org.json.org.id, name, scopes: ['read'] } });
      expect(r.status, r.text).to.equal(201);
      return r.json as { clientId: string; clientSecret: string };
    };
    const tokenOf = async (client: { clientId: string; clientSecret: string }) => {
      const r = await call(b.url, 'POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret } });
      expect(r.status, r.text).to.equal(200);
      return r.json.access_token as string;
    };
    const whoami = (node: TroupeNode, token: string) => call(node.url, 'GET', '/api/cli/whoami', { token }).then((r) => r.status);

    const doomed = await provision('doomed');
    const kept = await provision('kept');
    const memoised = await tokenOf(doomed);
    const unseen = await tokenOf(doomed);
    const keptToken = await tokenOf(kept);
    expect(await whoami(b, memoised)).to.equal(200);
    expect(await whoami(a, memoised)).to.equal(200);
    expect(await whoami(b, keptToken)).to.equal(200);

    const revoked = await call(a.url, 'DELETE', `/api/admin/m2m-clients/${doomed.clientId}`, { token: adminToken });
    expect(revoked.status, revoked.text).to.equal(200);
    expect(await whoami(a, memoised), 'the revoking node refuses before it answers').to.equal(401);
    await eventually(async () => (await whoami(b, memoised)) === 401, 'the other node to drop its memoised token');
    expect(await whoami(b, unseen)).to.equal(401);
    expect(await whoami(b, keptToken), 'another client is untouched').to.equal(200);

    const fresh = await boot();
    expect(await whoami(fresh, memoised), 'a node with no memo refuses from storage').to.equal(401);
    expect(await whoami(fresh, keptToken)).to.equal(200);
  });
});
