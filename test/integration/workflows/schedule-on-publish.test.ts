// Invariant (issue 32 item 6): the schedule a change implies is readable when the change answers. Right after the
// publishing PATCH of a scheduled workflow, its schedule reads `active` on the published version, never `none`;
// right after the PATCH that unpublishes or archives it, it reads `ended`; the same after a rollback that
// republishes. On both engine sets, and on a two-node cluster where the schedule is read on the other node.
import { expect } from 'chai';
import { loadConfig } from '../../../ops/config.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { startNode, type TroupeNode } from '../../../ops/node.js';
import { AmqpTransport } from '../../../transport/amqp/index.js';
import { call, engineSets, startTestNode, type CallResult, type TestNode } from '../../support/node.js';
import { withPostgresSchema, type TestDb } from '../../support/db.js';
import { engines, skipEngine } from '../../support/engines.js';
import { deleteBrokerTopology, testPrefix } from '../../support/transport.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';

/** Workflows published and read back per suite: enough that an answer racing the schedule would lose at least once. */
const WORKFLOWS = 30;

const scheduled = (name: string) =>
  `schemaVersion: v2\nname: ${name}\ntrigger: {type: schedule, cron: "0 9 * * *"}\nnodes:\n  - {id: done, kind: wait, seconds: 0}\nedges: []\n`;

type Api = (method: string, path: string, body?: unknown) => Promise<CallResult>;

/** Creates, publishes, reads; unpublishes, reads; republishes by rollback, reads: each read straight after the answer. */
async function publishAndReadAtOnce(writeTo: Api, readFrom: Api, projectId: string, name: string): Promise<void> {
  const created = await writeTo('POST', `/api/projects/${projectId}/workflows`, { name, definitionYaml: scheduled(name) });
  expect(created.status, created.text).to.equal(201);
  const id = created.json.id as string;
  const scheduleNow = async () => {
    const r = await readFrom('GET', `/api/workflows/${id}/schedule`);
    expect(r.status, r.text).to.equal(200);
    return r.json as { status: string; version: number | null; nextFireTimes: string[] };
  };

  const published = await writeTo('PATCH', `/api/workflows/${id}`, { status: 'published' });
  expect(published.status, published.text).to.equal(200);
  const afterPublish = await scheduleNow();
  expect(afterPublish, `${name} right after publish`).to.include({ status: 'active', version: 2 });
  expect(afterPublish.nextFireTimes).to.have.length(5);

  const unpublished = await writeTo('PATCH', `/api/workflows/${id}`, { status: 'draft' });
  expect(unpublished.status, unpublished.text).to.equal(200);
  const afterUnpublish = await scheduleNow();
  expect(afterUnpublish, `${name} right after unpublish`).to.include({ status: 'ended' });
  expect(afterUnpublish.nextFireTimes).to.deep.equal([]);

  const republished = await writeTo('PATCH', `/api/workflows/${id}`, { status: 'published' });
  expect(republished.status, republished.text).to.equal(200);
  expect(await scheduleNow(), `${name} right after republish`).to.include({ status: 'active', version: 4 });
  const archived = await writeTo('PATCH', `/api/workflows/${id}`, { status: 'archived' });
  expect(archived.status, archived.text).to.equal(200);
  expect(await scheduleNow(), `${name} right after archive`).to.include({ status: 'ended' });
}

for (const { set, skip } of engineSets) describe(`workflows: a schedule is readable when its publish answers (${set} engines)`, function () {
  if (skip) return;
  this.timeout(120_000);
  let t: TestNode;
  let org: ProvisionedOrg;

  // A scan far slower than the test, so only the change's own hand-off can make the schedule readable in time.
  before(async () => {
    t = await startTestNode({ engines: set, config: { scheduleScanMs: 60_000 } });
    org = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  const api: Api = (method, path, body) => t.call(method, path, { token: org.ownerToken, ...(body === undefined ? {} : { body }) });

  it(`shows each of ${WORKFLOWS} schedules active right after publish and ended right after unpublish`, async () => {
    for (let i = 0; i < WORKFLOWS; i += 1) await publishAndReadAtOnce(api, api, org.projectId, `nightly-${i}`);
  });

  it('shows the schedule a rollback republishes, right after the rollback answers', async () => {
    const created = await api('POST', `/api/projects/${org.projectId}/workflows`, { name: 'rolled', definitionYaml: scheduled('rolled') });
    const id = created.json.id as string;
    expect((await api('PATCH', `/api/workflows/${id}`, { status: 'published' })).status).to.equal(200);
    const manual = scheduled('rolled').replace('{type: schedule, cron: "0 9 * * *"}', '{type: manual}');
    expect((await api('PATCH', `/api/workflows/${id}`, { definitionYaml: manual })).status).to.equal(200);
    expect((await api('GET', `/api/workflows/${id}/schedule`)).json).to.include({ status: 'ended' });
    const rolledBack = await api('POST', `/api/workflows/${id}/versions/2/rollback`);
    expect(rolledBack.status, rolledBack.text).to.equal(200);
    expect((await api('GET', `/api/workflows/${id}/schedule`)).json).to.include({ status: 'active', version: 4 });
  });
});

describe('workflows: a schedule is readable on another node when its publish answers (Postgres, RabbitMQ)', function () {
  if (skipEngine.postgres || skipEngine.amqp) return;
  this.timeout(180_000);
  let db: TestDb;
  const nodes: TroupeNode[] = [];
  const adminToken = generateAdminToken();
  const masterKey = generateMasterKey();
  const prefix = testPrefix();

  const boot = async (): Promise<TroupeNode> => {
    const node = await startNode(loadConfig({ DATABASE_URL: engines.postgres, AMQP_URL: engines.amqp }, {
      port: 0, host: '127.0.0.1', nodeId: `${prefix}-${nodes.length + 1}`, masterKey, adminToken, logLevel: 'silent', shardCount: 4,
      scheduleScanMs: 60_000,
    }), { log: silentLogger(), searchPath: db.schema, transportPrefix: prefix });
    nodes.push(node);
    return node;
  };

  before(async () => { db = await withPostgresSchema('schedule_on_publish'); });
  after(async () => {
    // Every node closes before the shared shard queues go (see m2m-clients.revocation.cluster.test.ts).
    const transports = nodes.map((node) => node.deps.transport);
    for (const node of nodes.reverse()) await node.close();
    for (const transport of transports) if (transport instanceof AmqpTransport) await deleteBrokerTopology(transport);
    await db?.drop();
  });

  it(`publishes ${WORKFLOWS} scheduled workflows on one node and reads each schedule at once on the other`, async () => {
    const a = await boot();
    const b = await boot();
    const org = await call(a.url, 'POST', '/api/admin/orgs', { token: adminToken, body: { name: 'Acme', owner: { email: 'owner@acme.test' } } });
    expect(org.status, org.text).to.equal(201);
    const token = org.json.userToken as string;
    const on = (node: TroupeNode): Api => (method, path, body) => call(node.url, method, path, { token, ...(body === undefined ? {} : { body }) });
    for (let i = 0; i < WORKFLOWS; i += 1) {
      // Alternate which node writes, so the schedule's shard is as often held by the reader as by the writer.
      const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
      await publishAndReadAtOnce(on(writer), on(reader), org.json.project.id, `nightly-${i}`);
    }
  });
});
