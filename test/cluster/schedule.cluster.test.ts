/**
 * Invariant: a schedule fires exactly one run per fire on a cluster of any size, including while nodes are killed
 * and join. Three nodes run as separate processes on the real Postgres and RabbitMQ; a workflow fires every 2 s
 * (6-field cron); the node that owns the schedule is SIGKILLed a few fires in, and a fourth node joins a few fires
 * later. Counting the fires and runs afterwards in the database: every fire time from the first to the last is
 * recorded once, each started fire has exactly one run (of the published version, for that fire), and a fire is
 * missing a run only if it fell inside the kill window and the catch-up rule skipped it.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../../ops/secrets.js';
import { shardOf } from '../../transport/shards.js';
import { topologyNames } from '../../transport/amqp/topology.js';
import type { ClusterStatus } from '../../transport/cluster/index.js';
import { engines, skipEngine } from '../support/engines.js';
import { killNode, startNodeProcess, stopAll, type NodeProcess } from './processes.js';
import { callNode as call, sleep, waitFor } from './node-calls.js';
import { joiningNodeId } from './joining-node.js';

const SHARDS = 8;
const PERIOD_MS = 2_000;
const label = randomBytes(4).toString('hex');
const prefix = `troupe-sched-${label}`;
const schema = `t_sched_${label}`;
const adminToken = generateAdminToken();
const env: NodeJS.ProcessEnv = {
  DATABASE_URL: engines.postgres,
  TROUPE_DATABASE_SCHEMA: schema,
  AMQP_URL: engines.amqp,
  TROUPE_AMQP_PREFIX: prefix,
  TROUPE_MASTER_KEY: generateMasterKey(),
  TROUPE_ADMIN_TOKEN: adminToken,
  TROUPE_SHARD_COUNT: String(SHARDS),
  TROUPE_SHUTDOWN_GRACE_MS: '2000',
  TROUPE_SCHEDULE_SCAN_MS: '500',
  // The schedule fires every 2 s, so that fires land while nodes die and join within the test.
  TROUPE_SCHEDULE_MIN_INTERVAL_SECONDS: '1',
  TROUPE_LOG_LEVEL: 'info',
  REDIS_URL: '',
};

const definition = `schemaVersion: v2
name: heartbeat
trigger: {type: schedule, cron: "*/2 * * * * *", overlap: allow}
nodes:
  - {id: done, kind: wait, seconds: 0}
edges: []
`;

(skipEngine.postgres || skipEngine.amqp ? describe.skip : describe)('cluster: a schedule fires once per fire while nodes die and join', function () {
  this.timeout(150_000);
  const nodes: NodeProcess[] = [];

  before(async () => {
    nodes.push(await startNodeProcess(`a-${label}`, env));
    nodes.push(...await Promise.all([startNodeProcess(`b-${label}`, env), startNodeProcess(`c-${label}`, env)]));
    await waitFor('three nodes hold every shard', 30_000, async () => {
      const status = (await call(nodes[0]!, 'GET', '/api/admin/cluster', { token: adminToken })).json as ClusterStatus;
      return status.nodes.length === 3 && status.unclaimed.length === 0;
    });
  });

  after(async function () {
    this.timeout(60_000);
    await stopAll();
    const connection = await amqp.connect(engines.amqp);
    const channel = await connection.createChannel();
    const names = topologyNames(prefix, 'none');
    for (let shard = 0; shard < SHARDS; shard += 1) await channel.deleteQueue(names.shardQueue(shard));
    await channel.deleteQueue(names.deadLetterQueue);
    for (const exchange of [names.shardExchange, names.deadLetterExchange, names.eventExchange]) await channel.deleteExchange(exchange);
    await connection.close();
    const client = new pg.Client({ connectionString: engines.postgres });
    await client.connect();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
  });

  it('counts one run per fire across a SIGKILL of the schedule\'s owner and a join', async () => {
    const [a] = nodes as [NodeProcess];
    const provisioned = await call(a, 'POST', '/api/admin/orgs', { token: adminToken, body: { name: `sched-${label}`, owner: { email: `sched-${label}@example.com` } } });
    expect(provisioned.status, JSON.stringify(provisioned.json)).to.equal(201);
    const token = provisioned.json.userToken as string;
    const created = await call(a, 'POST', `/api/projects/${provisioned.json.project.id}/workflows`, { token, body: { name: 'heartbeat', definitionYaml: definition } });
    expect(created.status, JSON.stringify(created.json)).to.equal(201);
    const workflowId = created.json.id as string;
    const published = await call(a, 'PATCH', `/api/workflows/${workflowId}`, { token, body: { status: 'published' } });
    expect(published.status, JSON.stringify(published.json)).to.equal(200);
    const publishedAt = Date.now();

    // Let it fire a few times, then kill the node that owns the schedule (not the one we talk to, if we can help it).
    await sleep(6_000);
    const status = (await call(a, 'GET', '/api/admin/cluster', { token: adminToken })).json as ClusterStatus;
    const shard = shardOf(`workflow-schedule/${workflowId}`, SHARDS);
    const ownerId = status.nodes.find((n) => n.owned.includes(shard))?.nodeId;
    const victim = nodes.find((n) => n.nodeId === ownerId) ?? nodes[1]!;
    const killedAt = Date.now();
    await killNode(victim);
    const survivor = nodes.find((n) => n !== victim)!;

    // A fourth node joins while the schedule keeps firing; the shards rebalance onto it.
    await sleep(4_000);
    const joining = startNodeProcess(joiningNodeId('d', label, nodes.filter((n) => n !== victim).map((n) => n.nodeId), SHARDS), env)
      .then((joined) => { nodes.push(joined); return joined; });
    await sleep(Math.max(0, publishedAt + 22_000 - Date.now()));
    const joined = await joining;
    await waitFor('the joined node holds shards', 20_000, async () =>
      ((await call(survivor, 'GET', '/api/admin/cluster', { token: adminToken })).json as ClusterStatus).nodes.some((n) => n.nodeId === joined.nodeId && n.owned.length > 0));

    const archived = await call(survivor, 'PATCH', `/api/workflows/${workflowId}`, { token, body: { status: 'archived' } });
    expect(archived.status, JSON.stringify(archived.json)).to.equal(200);
    const archivedAt = Date.now();
    await waitFor('the schedule ends', 15_000, async () => (await call(survivor, 'GET', `/api/workflows/${workflowId}/schedule`, { token })).json.status === 'ended');
    // A fire decided just before the archive finishes its start; then nothing moves any more.
    await waitFor('no fire left starting', 15_000, async () => (await call(survivor, 'GET', `/api/workflows/${workflowId}/schedule`, { token })).json.pendingFireTime === null);

    const client = new pg.Client({ connectionString: engines.postgres });
    await client.connect();
    try {
      const fires = (await client.query(
        `select extract(epoch from fire_time) * 1000 as at, outcome, run_id from "${schema}".workflow_schedule_fires where workflow_id = $1 order by fire_time`, [workflowId],
      )).rows.map((r) => ({ at: Number(r.at), outcome: r.outcome as string, runId: r.run_id as string | null }));
      const runs = (await client.query(
        `select id, extract(epoch from fire_time) * 1000 as at, trigger_kind, version from "${schema}".workflow_runs where workflow_id = $1`, [workflowId],
      )).rows.map((r) => ({ id: r.id as string, at: Number(r.at), kind: r.trigger_kind as string, version: Number(r.version) }));

      const started = fires.filter((f) => f.outcome === 'started');
      const skipped = fires.filter((f) => f.outcome === 'skipped-missed');
      process.stdout.write(`      fires ${fires.length}: started ${started.length}, skipped ${skipped.length}; runs ${runs.length}; killed ${victim.nodeId} (owner ${ownerId ?? 'unknown'})\n`);

      const expected = Math.floor((archivedAt - publishedAt) / PERIOD_MS);
      expect(fires.length, `fires between publish and archive (${archivedAt - publishedAt} ms)`).to.be.within(expected - 1, expected + 1);
      // Every fire time from the first to the last is there, once (the primary key would refuse a second).
      for (let i = 1; i < fires.length; i += 1) expect(fires[i]!.at - fires[i - 1]!.at, `gap after fire ${i - 1}`).to.equal(PERIOD_MS);
      expect(fires.filter((f) => !['started', 'skipped-missed'].includes(f.outcome)), 'every fire settled').to.deep.equal([]);

      // One run per started fire, for that fire, and nothing else.
      expect(runs.every((r) => r.kind === 'schedule' && r.version === 2)).to.equal(true);
      expect(runs.map((r) => r.at).sort()).to.deep.equal(started.map((f) => f.at).sort());
      expect(new Set(runs.map((r) => r.at)).size, 'no fire started two runs').to.equal(runs.length);
      expect(runs.map((r) => r.id).sort()).to.deep.equal(started.map((f) => f.runId).sort());

      // A fire goes without a run only across the kill: while the owner's death was being noticed.
      for (const f of skipped) expect(f.at, 'a skipped fire lies in the kill window').to.be.within(killedAt - PERIOD_MS, killedAt + 3 * PERIOD_MS);
      expect(skipped.length).to.be.at.most(2);
    } finally {
      await client.end();
    }
  });
});
