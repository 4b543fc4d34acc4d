/**
 * Invariant (issue 36): a session is claimed exactly once across a cluster, and a concurrency key's limit holds
 * across it. Two nodes run as separate processes on the real Postgres and RabbitMQ; four workers, two talking to each
 * node, poll and claim as fast as they can while sessions are dispatched through both nodes, so polls on the two nodes
 * keep offering the same sessions and their claims race. Every session must end completed, with exactly one accepted
 * claim (one `claimed` transition in the database, one 200 among the workers), and the sessions of a key limited to 1
 * must never hold claims at the same time.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../../ops/secrets.js';
import { topologyNames } from '../../transport/amqp/topology.js';
import type { ClusterStatus } from '../../transport/cluster/index.js';
import { engines, skipEngine } from '../support/engines.js';
import { startNodeProcess, stopAll, type NodeProcess } from './processes.js';
import { callNode as call, sleep, waitFor } from './node-calls.js';

const SHARDS = 8;
const SESSIONS = 120;
const KEYED = 12;
const label = randomBytes(4).toString('hex');
const prefix = `troupe-claim-${label}`;
const schema = `t_claim_${label}`;
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
  TROUPE_LOG_LEVEL: 'info',
  // The test's workers poll and report far faster than real ones; the limits are not what is tested here.
  TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '1000000',
  TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '1000000',
  TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE: '1000000',
  TROUPE_RATE_LIMIT_WORKER_REPORTS_PER_MINUTE: '1000000',
  REDIS_URL: '',
};

interface Worker { readonly node: NodeProcess; readonly workerId: string; readonly runtimeJwt: string }

(skipEngine.postgres || skipEngine.amqp ? describe.skip : describe)('cluster: a session is claimed exactly once by workers on two nodes', function () {
  this.timeout(180_000);
  const nodes: NodeProcess[] = [];

  before(async () => {
    nodes.push(await startNodeProcess(`a-${label}`, env));
    nodes.push(await startNodeProcess(`b-${label}`, env));
    await waitFor('two nodes hold every shard', 30_000, async () => {
      const status = (await call(nodes[0]!, 'GET', '/api/admin/cluster', { token: adminToken })).json as ClusterStatus;
      return status.nodes.length === 2 && status.unclaimed.length === 0 && status.nodes.every((n) => n.owned.length > 0);
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

  it('claims each of the sessions dispatched through both nodes once, and never two of a key limited to 1 at once', async () => {
    const [a, b] = nodes as [NodeProcess, NodeProcess];
    const provisioned = await call(a, 'POST', '/api/admin/orgs', { token: adminToken, body: { name: `claim-${label}`, owner: { email: `claim-${label}@example.com` } } });
    expect(provisioned.status, JSON.stringify(provisioned.json)).to.equal(201);
    const apiKey = provisioned.json.apiKey.fullKey as string;
    const projectId = provisioned.json.project.id as string;
    const limited = await call(b, 'PUT', `/api/projects/${projectId}/concurrency`, { token: provisioned.json.userToken, body: { defaultLimit: 1, strategy: 'queue' } });
    expect(limited.status, JSON.stringify(limited.json)).to.equal(200);

    const workers: Worker[] = [];
    for (const [i, node] of [a, a, b, b].entries()) {
      const r = await call(node, 'POST', '/v1/daemon/register', { body: { registrationToken: provisioned.json.registrationToken, hostname: `w${i}`, maxAgents: 4 } });
      expect(r.status, JSON.stringify(r.json)).to.equal(200);
      workers.push({ node, workerId: r.json.workerId, runtimeJwt: r.json.runtimeJwt });
    }

    const accepted = new Map<string, string[]>(); // session → the workers whose claim was answered 200
    const refusals: Record<string, number> = {};
    let dispatching = true;
    const completed = new Set<string>();
    const work = async (w: Worker) => {
      while (dispatching || completed.size < SESSIONS) {
        const polled = await call(w.node, 'POST', '/api/daemon/poll', { token: w.runtimeJwt, body: { workerId: w.workerId, capacity: 3 } });
        expect(polled.status, JSON.stringify(polled.json)).to.equal(200);
        const offers = (polled.json.sessions as Array<{ id: string; queuedPrompts?: unknown }>).filter((s) => s.queuedPrompts === undefined);
        if (offers.length === 0) { await sleep(20); continue; }
        await Promise.all(offers.map(async ({ id }) => {
          const claimed = await call(w.node, 'POST', `/api/sessions/${id}/status`, { token: w.runtimeJwt, body: { workerId: w.workerId, status: 'claimed' } });
          if (claimed.status !== 200) {
            refusals[claimed.json?.code ?? claimed.status] = (refusals[claimed.json?.code ?? claimed.status] ?? 0) + 1;
            expect(claimed.status, JSON.stringify(claimed.json)).to.equal(409);
            return;
          }
          accepted.set(id, [...(accepted.get(id) ?? []), w.workerId]);
          for (const status of ['running', 'finalizing', 'completed']) {
            const r = await call(w.node, 'POST', `/api/sessions/${id}/status`, { token: w.runtimeJwt, body: { workerId: w.workerId, status } });
            expect(r.status, `${status}: ${JSON.stringify(r.json)}`).to.equal(200);
          }
          completed.add(id);
        }));
      }
    };
    const running = Promise.all(workers.map(work));
    const dispatched: string[] = [];
    await Promise.all([a, b].map(async (node, n) => {
      for (let i = n; i < SESSIONS; i += 2) {
        const keyed = i < KEYED;
        const r = await call(node, 'POST', '/api/agent-dispatch', { token: apiKey, body: { projectId, prompt: `session ${i}`, ...(keyed ? { concurrencyKey: 'branch:one' } : {}) } });
        expect(r.status, JSON.stringify(r.json)).to.equal(201);
        dispatched.push(r.json.sessionId);
      }
    }));
    dispatching = false;
    await Promise.race([running, sleep(120_000).then(() => { throw new Error(`only ${completed.size} of ${SESSIONS} completed`); })]);
    process.stdout.write(`      ${SESSIONS} sessions; refused claims: ${JSON.stringify(refusals)}\n`);

    expect([...completed].sort()).to.deep.equal([...dispatched].sort());
    for (const id of dispatched) expect(accepted.get(id), `claims of ${id}`).to.have.length(1);
    const client = new pg.Client({ connectionString: engines.postgres });
    await client.connect();
    try {
      const claims = (await client.query(
        `select s.public_id, count(*)::int as n from "${schema}".session_transitions t join "${schema}".sessions s on s.id = t.session_id
         where s.project_id = $1 and t.to_status = 'claimed' group by s.public_id`, [projectId],
      )).rows as Array<{ public_id: string; n: number }>;
      expect(claims.length).to.equal(SESSIONS);
      expect(claims.filter((c) => c.n !== 1), 'a session claimed twice').to.deep.equal([]);
      // The key's holds, claim to end, one after another.
      const holds = (await client.query(
        `select claimed_at, finished_at from "${schema}".sessions where project_id = $1 and concurrency_key = 'branch:one' order by claimed_at`, [projectId],
      )).rows as Array<{ claimed_at: Date; finished_at: Date }>;
      expect(holds).to.have.length(KEYED);
      for (let i = 1; i < holds.length; i++) {
        expect(holds[i]!.claimed_at.getTime(), `hold ${i} began before hold ${i - 1} ended`).to.be.at.least(holds[i - 1]!.finished_at.getTime());
      }
    } finally {
      await client.end();
    }
  });
});
