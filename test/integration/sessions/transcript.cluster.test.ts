// Invariant: across a cluster the transcript stays one record: two node processes on the real Postgres and RabbitMQ,
// a worker relaying output and tool steps through node A while prompts arrive through node B, and readers on both
// nodes following from a seq they read: each follower gets exactly the stored entries after its seq, once each, in
// order, and the stored seqs are gap-free. The same nudges across nodes wake an agent's wait for a decision: a person
// deciding through node B ends the wait held on node A at once.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { topologyNames } from '../../../transport/amqp/topology.js';
import { engines, skipEngine } from '../../support/engines.js';
import { startNodeProcess, stopAll, type NodeProcess } from '../../cluster/processes.js';
import { callNode as call } from '../../cluster/node-calls.js';
import { openSse } from '../streams/sse-client.js';

const SHARDS = 4;
const label = randomBytes(4).toString('hex');
const prefix = `troupe-transcript-${label}`;
const schema = `t_transcript_cluster_${label}`;
const adminToken = generateAdminToken();
const env: NodeJS.ProcessEnv = {
  DATABASE_URL: engines.postgres, TROUPE_DATABASE_SCHEMA: schema, AMQP_URL: engines.amqp, TROUPE_AMQP_PREFIX: prefix,
  TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, TROUPE_SHARD_COUNT: String(SHARDS),
  TROUPE_SHUTDOWN_GRACE_MS: '2000', TROUPE_LOG_LEVEL: 'info', REDIS_URL: '',
  TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '1000000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '1000000',
  TROUPE_RATE_LIMIT_WORKER_REPORTS_PER_MINUTE: '1000000',
};

(skipEngine.postgres || skipEngine.amqp ? describe.skip : describe)('session transcript across two nodes (Postgres, RabbitMQ)', function () {
  this.timeout(120_000);
  let a: NodeProcess;
  let b: NodeProcess;

  before(async () => {
    a = await startNodeProcess(`ta-${label}`, env);
    b = await startNodeProcess(`tb-${label}`, env);
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

  it('followers on both nodes get exactly the stored entries after the seq they read', async () => {
    const org = await call(a, 'POST', '/api/admin/orgs', { token: adminToken, body: { name: `t-${label}`, owner: { email: `t-${label}@example.com` } } });
    expect(org.status, JSON.stringify(org.json)).to.equal(201);
    const apiKey = org.json.apiKey.fullKey as string;
    const w = await call(a, 'POST', '/v1/daemon/register', { body: { registrationToken: org.json.registrationToken, hostname: 'w', maxAgents: 4 } });
    const worker = { workerId: w.json.workerId as string, jwt: w.json.runtimeJwt as string };
    const dispatched = await call(a, 'POST', '/api/agent-dispatch', { token: apiKey, body: { projectId: org.json.project.id, prompt: 'Ship it' } });
    const id = dispatched.json.sessionId as string;
    await call(a, 'POST', '/api/daemon/poll', { token: worker.jwt, body: { workerId: worker.workerId, capacity: 4 } });
    for (const status of ['claimed', 'running']) {
      expect((await call(a, 'POST', `/api/sessions/${id}/status`, { token: worker.jwt, body: { workerId: worker.workerId, status } })).status).to.equal(200);
    }
    const output = (chunks: string[]) => call(a, 'POST', `/api/sessions/${id}/output`, { token: worker.jwt, body: { workerId: worker.workerId, chunks } });
    await output(['first\n']);

    const readOn = async (node: NodeProcess) => (await call(node, 'GET', `/api/public/sessions/${id}/transcript?limit=1000`, { token: apiKey })).json;
    const nB = (await readOn(b)).lastSeq as number;
    const onB = await openSse(`${b.url}/api/public/sessions/${id}/transcript/stream?after=${nB}`, { token: apiKey });
    const onA = await openSse(`${a.url}/api/public/sessions/${id}/transcript/stream?after=0`, { token: apiKey });
    expect([onA.status, onB.status]).to.deep.equal([200, 200]);

    await Promise.all([
      (async () => { for (let i = 0; i < 30; i++) expect((await output([`line ${i}a\n`, `line ${i}b\n`])).status).to.equal(202); })(),
      (async () => {
        for (let i = 0; i < 3; i++) {
          expect((await call(b, 'POST', `/api/public/sessions/${id}/prompt`, { token: apiKey, body: { prompt: `nudge ${i}` } })).status).to.equal(200);
        }
      })(),
      (async () => {
        const steps = [{ tool: 'Bash', summary: 'make', at: new Date().toISOString(), id: 'step-1' }];
        expect((await call(a, 'POST', `/api/sessions/${id}/steps`, { token: worker.jwt, body: { workerId: worker.workerId, steps } })).status).to.equal(202);
      })(),
    ]);
    for (const status of ['finalizing', 'completed']) {
      expect((await call(a, 'POST', `/api/sessions/${id}/status`, { token: worker.jwt, body: { workerId: worker.workerId, status } })).status).to.equal(200);
    }
    const end = (f: { event?: string; data: any }) => f.event === 'transcript.entry' && f.data.status === 'completed';
    await Promise.all([onA.next(end, 15_000), onB.next(end, 15_000)]);
    const stored = (await readOn(a)).entries as { seq: number }[];
    expect(stored.map((e) => e.seq)).to.deep.equal(Array.from({ length: stored.length }, (_, i) => i + 1));
    expect(stored).to.have.length(4 + 1 + 60 + 3 + 1 + 2);
    const entriesOf = (c: typeof onA) => c.frames.filter((f) => f.event === 'transcript.entry').map((f) => f.data);
    expect(entriesOf(onB), 'the follower on node B').to.deep.equal(stored.filter((e) => e.seq > nB));
    expect(entriesOf(onA), 'the follower on node A').to.deep.equal(stored);
    onA.close();
    onB.close();
  });

  it("an agent's wait on one node wakes when a person decides on the other, well before its fallback look", async () => {
    const org = await call(a, 'POST', '/api/admin/orgs', { token: adminToken, body: { name: `w-${label}`, owner: { email: `w-${label}@example.com` } } });
    expect(org.status, JSON.stringify(org.json)).to.equal(201);
    const w = await call(a, 'POST', '/v1/daemon/register', { body: { registrationToken: org.json.registrationToken, hostname: 'w', maxAgents: 4 } });
    const worker = { workerId: w.json.workerId as string, jwt: w.json.runtimeJwt as string };
    const dispatched = await call(a, 'POST', '/api/agent-dispatch', { token: org.json.apiKey.fullKey, body: { projectId: org.json.project.id, prompt: 'Migrate' } });
    const id = dispatched.json.sessionId as string;
    await call(a, 'POST', '/api/daemon/poll', { token: worker.jwt, body: { workerId: worker.workerId, capacity: 4 } });
    for (const status of ['claimed', 'running']) {
      const res = await call(a, 'POST', `/api/sessions/${id}/status`, { token: worker.jwt, body: { workerId: worker.workerId, status } });
      expect(res.status, JSON.stringify(res.json)).to.equal(200);
    }
    const minted = await call(a, 'POST', `/api/sessions/${id}/agent-token`, { token: worker.jwt, body: { workerId: worker.workerId } });
    const sessionToken = minted.json.token as string;
    const opened = await call(a, 'POST', `/api/sessions/${id}/agent/approvals`, { token: sessionToken, body: { summary: 'Run the migration' } });
    expect(opened.status, JSON.stringify(opened.json)).to.equal(201);
    const waiting = call(a, 'GET', `/api/sessions/${id}/agent/approvals/${opened.json.id}?waitSeconds=20`, { token: sessionToken });
    await new Promise((resolve) => setTimeout(resolve, 400));
    const decided = Date.now();
    const decision = await call(b, 'POST', `/api/approval-gates/${opened.json.id}/decide`, { token: org.json.userToken, body: { decision: 'approve' } });
    expect(decision.status, JSON.stringify(decision.json)).to.equal(200);
    const answer = await waiting;
    expect(answer.json.status).to.equal('approved');
    expect(Date.now() - decided, 'woken by the decision, not the 5 s look').to.be.below(2_500);
  });
});
