// Invariant: a node restarted mid-session on real engines (Postgres, RabbitMQ) costs the worker nothing but time:
// its agent keeps running while the node is gone, the outcome it could not report waits in the state dir, and once
// the node is back the worker reconnects and the session ends completed with every status reported exactly once.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import amqp from 'amqplib';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { topologyNames } from '../../../transport/amqp/topology.js';
import { engines, skipEngine } from '../../support/engines.js';
import { killNode, startNodeProcess, stopAll, type NodeProcess } from '../../cluster/processes.js';
import { api, dispatch, dropSchema, provision, startWorker, stopWorkers, untilStatus } from './support.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('troupe worker across a node restart (real engines)', function () {
  if (skipEngine.postgres || skipEngine.amqp) return;
  this.timeout(120_000);
  const label = randomBytes(4).toString('hex');
  const schema = `t_worker_restart_${label}`;
  const prefix = `troupe-worker-${label}`;
  let env: NodeJS.ProcessEnv;
  let node: NodeProcess | undefined;

  before(async () => {
    env = {
      DATABASE_URL: engines.postgres, TROUPE_DATABASE_SCHEMA: schema, AMQP_URL: engines.amqp, TROUPE_AMQP_PREFIX: prefix,
      TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: generateAdminToken(), TROUPE_SHARD_COUNT: '4',
      TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '100000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000',
      TROUPE_LOG_LEVEL: 'info', REDIS_URL: '', PORT: String(await freePort()), TROUPE_SHUTDOWN_GRACE_MS: '1000',
    };
  });
  after(async () => {
    await stopWorkers();
    await stopAll();
    await dropSchema(schema);
    // As the cluster suite does: the shared queues and exchanges; each node's own queues went with its connection.
    const connection = await amqp.connect(engines.amqp);
    try {
      const channel = await connection.createChannel();
      const names = topologyNames(prefix, 'none');
      for (let shard = 0; shard < 4; shard += 1) await channel.deleteQueue(names.shardQueue(shard));
      await channel.deleteQueue(names.deadLetterQueue);
      for (const exchange of [names.shardExchange, names.deadLetterExchange, names.eventExchange]) await channel.deleteExchange(exchange);
    } finally {
      await connection.close();
    }
  });

  it('keeps the agent running while the node is gone and reports its outcome once when it is back', async () => {
    node = await startNodeProcess(`restart-a-${label}`, env);
    const a = api(node.url);
    const org = await provision(a, env.TROUPE_ADMIN_TOKEN!);
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, env: { ECHO_AGENT_LINES: '10', ECHO_AGENT_TICK_MS: '200' } });
    await w.waitFor((l) => l.event === 'worker.registered', 15_000);
    const id = await dispatch(a, org, 'survive the restart');
    await w.waitFor((l) => l.event === 'session.started' && l.sessionId === id, 10_000);
    await killNode(node);
    // The agent finishes while no node answers: its report waits in the state dir.
    await w.waitFor((l) => l.event === 'session.finished' && l.sessionId === id, 15_000);
    await w.waitFor((l) => l.event === 'session.report_deferred' && l.sessionId === id, 15_000);
    expect(readdirSync(path.join(w.stateDir, 'reports'))).to.deep.equal([`${id}.json`]);
    node = await startNodeProcess(`restart-b-${label}`, env);
    await w.waitFor((l) => l.event === 'server.back', 30_000);
    const done = await untilStatus(a, org, id, ['completed', 'failed', 'stopped'], 30_000);
    expect(done.status).to.equal('completed');
    expect(done.costUsd).to.equal(0.01);
    expect(done.timeline.map((t: { status: string }) => t.status), 'each status once').to.deep.equal(['pending', 'claimed', 'running', 'finalizing', 'completed']);
    expect(done.activities.filter((x: { kind: string }) => x.kind === 'session.completed')).to.have.length(1);
    // The node records `completed` before its answer reaches the worker, which logs the report only then.
    await w.waitFor((l) => l.event === 'session.reported' && l.sessionId === id, 10_000);
    expect(w.lines.filter((l) => l.event === 'session.reported' && l.sessionId === id)).to.have.length(1);
    expect(readdirSync(path.join(w.stateDir, 'reports'))).to.deep.equal([]);
    expect(w.lines.filter((l) => l.event === 'session.started'), 'the agent ran once').to.have.length(1);
    // And it takes new work from the restarted node, pushed again.
    const next = await dispatch(a, org, 'after the restart');
    expect((await untilStatus(a, org, next, ['completed', 'failed'], 20_000)).status).to.equal('completed');
  });
});
