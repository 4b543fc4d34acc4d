/**
 * Invariant: a Troupe cluster on one RabbitMQ keeps one owner per shard and loses no acknowledged write.
 * Three nodes run as separate processes against the real Postgres and RabbitMQ. Requests sent to any node reach
 * the shard's owner and answer; every shard ends up held by its placement target; when one node is SIGKILLed
 * under a steady load of actor commands (API key issue, an org actor command), every key whose issue was answered
 * 2xx still authenticates afterwards and the survivors hold all shards within 10 s; a fourth node that joins
 * takes its share; and a message no node can read lands in the dead-letter queue while its shard keeps flowing.
 * Session status events published by the node that owns a session reach an SSE subscriber on another node, in
 * the order the session changed.
 */
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../../ops/secrets.js';
import { shardOf } from '../../transport/shards.js';
import { topologyNames } from '../../transport/amqp/topology.js';
import type { ClusterStatus } from '../../transport/cluster/index.js';
import { engines, skipEngine } from '../support/engines.js';
import { openSse, type SseClient } from '../integration/streams/sse-client.js';
import { killNode, startNodeProcess, stopAll, type NodeProcess } from './processes.js';
import { joiningNodeId, primaryShardsOf } from './joining-node.js';
import { sessionKey } from '../../actors/kinds/session/index.js';

const SHARDS = 16;
const label = randomBytes(4).toString('hex');
const prefix = `troupe-cluster-${label}`;
const schema = `t_cluster_${label}`;
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
  REDIS_URL: '',
};

interface Answer { status: number; json: any }

async function call(node: NodeProcess, method: string, path: string, init: { body?: unknown; token?: string } = {}): Promise<Answer> {
  const res = await fetch(`${node.url}${path}`, {
    method,
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: any;
  try { json = JSON.parse(text); } catch { json = text; }
  return { status: res.status, json };
}

async function statusOf(node: NodeProcess): Promise<ClusterStatus> {
  const answer = await call(node, 'GET', '/api/admin/cluster', { token: adminToken });
  expect(answer.status, JSON.stringify(answer.json)).to.equal(200);
  return answer.json as ClusterStatus;
}

/** Every live node holds exactly the shards placement gives it, and no shard is without a holder. */
function settled(status: ClusterStatus, nodeIds: readonly string[]): boolean {
  const members = status.nodes.map((n) => n.nodeId).sort();
  if (JSON.stringify(members) !== JSON.stringify([...nodeIds].sort())) return false;
  if (status.unclaimed.length > 0) return false;
  return status.nodes.every((n) => JSON.stringify(n.owned) === JSON.stringify(n.target));
}

async function waitFor<T>(what: string, withinMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + withinMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms${last ? ` (${(last as Error).message})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function settledWithin(node: NodeProcess, nodeIds: readonly string[], withinMs: number): Promise<ClusterStatus> {
  let last: ClusterStatus | undefined;
  try {
    return await waitFor(`cluster settles on ${nodeIds.join(', ')}`, withinMs, async () => {
      last = await statusOf(node);
      return settled(last, nodeIds) ? last : undefined;
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.nodes.map((n) => ({ id: n.nodeId, owned: n.owned, target: n.target })))} unclaimed ${JSON.stringify(last?.unclaimed)}`);
  }
}

interface Org { id: string; apiKey: string; projectId: string; registrationToken: string }

async function provisionOrg(node: NodeProcess, name: string): Promise<Org> {
  const answer = await call(node, 'POST', '/api/admin/orgs', { token: adminToken, body: { name, owner: { email: `${name}@example.com` } } });
  expect(answer.status, JSON.stringify(answer.json)).to.equal(201);
  return { id: answer.json.org.id, apiKey: answer.json.apiKey.fullKey, projectId: answer.json.project.id, registrationToken: answer.json.registrationToken };
}

async function issueKey(node: NodeProcess, org: Org, name: string): Promise<Answer> {
  return call(node, 'POST', `/api/org/${org.id}/keys`, { token: org.apiKey, body: { name } });
}

(skipEngine.postgres || skipEngine.amqp ? describe.skip : describe)('cluster: three nodes over RabbitMQ', function () {
  this.timeout(120_000);
  let a: NodeProcess;
  let b: NodeProcess;
  let c: NodeProcess;
  let d: NodeProcess | undefined;
  const orgs: Org[] = [];

  before(async () => {
    // The first node runs the migrations; the others then start against a ready schema.
    a = await startNodeProcess(`a-${label}`, env);
    [b, c] = await Promise.all([startNodeProcess(`b-${label}`, env), startNodeProcess(`c-${label}`, env)]);
  });

  after(async function () {
    this.timeout(60_000);
    await stopAll();
    const connection = await amqp.connect(engines.amqp);
    const channel = await connection.createChannel();
    const names = topologyNames(prefix, 'none');
    for (let shard = 0; shard < SHARDS; shard += 1) await channel.deleteQueue(names.shardQueue(shard));
    await channel.deleteQueue(names.deadLetterQueue);
    for (const exchange of [names.shardExchange, names.deadLetterExchange, names.eventExchange, names.lostEventExchange]) await channel.deleteExchange(exchange);
    await connection.close();
    const client = new pg.Client({ connectionString: engines.postgres });
    await client.connect();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
  });

  it('places every shard on its target and answers requests sent to any node', async () => {
    const status = await settledWithin(a, [a.nodeId, b.nodeId, c.nodeId], 30_000);
    for (const node of status.nodes) expect(node.owned.length, node.nodeId).to.be.greaterThan(0);

    // The org actors are spread over shards held by all three nodes; each node forwards to the owner. Org ids are
    // random, so six of them all land on one node once in ~250 runs: provision more until they do not (at most 12).
    const holderOf = (org: Org) => status.nodes.find((n) => n.owned.includes(shardOf(`org/${org.id}`, SHARDS)))?.nodeId;
    for (let i = 0; i < 12 && (i < 6 || new Set(orgs.map(holderOf)).size < 2); i += 1) orgs.push(await provisionOrg(a, `org-${label}-${i}`));
    const holders = new Set(orgs.map(holderOf));
    expect(holders.size, 'org actors on more than one node').to.be.greaterThan(1);
    for (const org of orgs) {
      for (const node of [b, c]) {
        const issued = await issueKey(node, org, `via-${node.nodeId}`);
        expect(issued.status, JSON.stringify(issued.json)).to.equal(201);
        const whoami = await call(a, 'GET', '/api/cli/whoami', { token: issued.json.fullKey });
        expect(whoami.status, JSON.stringify(whoami.json)).to.equal(200);
      }
    }
  });

  it('streams session events published on the owning node to an SSE subscriber on another node, in order per session', async () => {
    const org = orgs[2]!;
    const registered = await call(a, 'POST', '/v1/daemon/register', { body: { registrationToken: org.registrationToken, hostname: 'cluster-host', maxAgents: 4 } });
    expect(registered.status, JSON.stringify(registered.json)).to.equal(200);
    const daemon = { workerId: registered.json.workerId as string, jwt: registered.json.runtimeJwt as string };
    const stream: SseClient = await openSse(`${b.url}/api/sessions/events`, { token: org.apiKey });
    try {
      expect(stream.status).to.equal(200);
      const status = await statusOf(a);
      const ids: string[] = [];
      const keys = new Map<string, string>();
      const ownedElsewhere = (id: string) => !status.nodes.find((n) => n.nodeId === b.nodeId)!.owned.includes(shardOf(`session/${keys.get(id)}`, SHARDS));
      // Sessions until at least two are owned by a node other than the subscriber's, so their events cross the broker.
      for (let i = 0; i < 12 && ids.filter(ownedElsewhere).length < 2; i += 1) {
        const trackerSessionId = `troupe:${randomUUID()}`;
        const dispatched = await call(a, 'POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: `cluster ${i}`, trackerSessionId } });
        expect(dispatched.status, JSON.stringify(dispatched.json)).to.equal(201);
        ids.push(dispatched.json.sessionId as string);
        keys.set(dispatched.json.sessionId as string, sessionKey(org.id, trackerSessionId));
      }
      for (const id of ids) {
        for (const next of ['claimed', 'running']) {
          const reported = await call(c, 'POST', `/api/sessions/${id}/status`, { token: daemon.jwt, body: { status: next, workerId: daemon.workerId } });
          expect(reported.status, JSON.stringify(reported.json)).to.equal(200);
        }
      }
      for (const id of ids) {
        await stream.next((f) => f.event === 'session.status' && f.data.sessionId === id && f.data.status === 'running', 10_000)
          .catch((err: Error) => { throw new Error(`${err.message} for session ${id}; frames seen: ${JSON.stringify(stream.frames.map((f) => [f.event, f.data?.sessionId, f.data?.status]))}`); });
      }
      for (const id of ids) {
        const order = stream.frames.filter((f) => f.data?.sessionId === id).map((f) => f.data.status);
        expect(order, `events of session ${id}`).to.deep.equal(['pending', 'claimed', 'running']);
      }
    } finally {
      stream.close();
    }
  });

  it('loses no acknowledged write when a node is SIGKILLed under load, and the survivors hold every shard within 10 s', async () => {
    const acknowledged: string[] = [];
    const failures = new Map<number, number>();
    let stop = false;
    let sent = 0;
    // Steady load through the two survivors: each worker issues keys one after another for its org.
    const workers = orgs.map(async (org, i) => {
      const via = i % 2 === 0 ? a : b;
      while (!stop) {
        sent += 1;
        try {
          const issued = await issueKey(via, org, `load-${sent}`);
          if (issued.status === 201) acknowledged.push(issued.json.fullKey as string);
          else failures.set(issued.status, (failures.get(issued.status) ?? 0) + 1);
        } catch {
          failures.set(0, (failures.get(0) ?? 0) + 1);
        }
      }
    });
    await waitFor('load running', 10_000, async () => (acknowledged.length >= 20 ? true : undefined));
    const before = acknowledged.length;
    await killNode(c);
    const killedAt = Date.now();
    const status = await settledWithin(a, [a.nodeId, b.nodeId], 10_000);
    const rebalancedMs = Date.now() - killedAt;
    await waitFor('load continues after the kill', 10_000, async () => (acknowledged.length >= before + 20 ? true : undefined));
    stop = true;
    await Promise.all(workers);

    // The checker: every key whose issue was answered 201 authenticates on a survivor.
    const lost: string[] = [];
    for (const key of acknowledged) {
      const whoami = await call(b, 'GET', '/api/cli/whoami', { token: key });
      if (whoami.status !== 200) lost.push(key.slice(0, 12));
    }
    console.log(`      ${acknowledged.length} acknowledged writes, ${[...failures].map(([s, n]) => `${n}×${s}`).join(' ') || 'no failures'}, rebalanced in ${rebalancedMs} ms`);
    expect(lost, 'acknowledged keys that do not authenticate').to.deep.equal([]);
    expect(status.nodes.reduce((sum, n) => sum + n.owned.length, 0)).to.equal(SHARDS);
  });

  it('gives a joining node its share', async () => {
    const dId = joiningNodeId('d', label, [a.nodeId, b.nodeId], SHARDS);
    d = await startNodeProcess(dId, env);
    const status = await settledWithin(a, [a.nodeId, b.nodeId, d.nodeId], 30_000);
    const joined = status.nodes.find((n) => n.nodeId === d!.nodeId)!;
    expect(joined.owned).to.deep.equal(primaryShardsOf(dId, [a.nodeId, b.nodeId, dId], SHARDS));
    expect(joined.owned.length).to.be.within(1, SHARDS - 2);
    const issued = await issueKey(d, orgs[0]!, 'via-d');
    expect(issued.status, JSON.stringify(issued.json)).to.equal(201);
  });

  it('dead-letters a message no node can read and keeps the shard flowing', async () => {
    const names = topologyNames(prefix, 'none');
    const connection = await amqp.connect(engines.amqp);
    try {
      const channel = await connection.createConfirmChannel();
      const shard = shardOf(`org/${orgs[1]!.id}`, SHARDS);
      const dead = async () => (await channel.checkQueue(names.deadLetterQueue)).messageCount;
      const deadBefore = await dead();
      await new Promise<void>((resolve, reject) =>
        channel.publish(names.shardExchange, String(shard), Buffer.from('{"not": "an envelope"'), { persistent: true }, (err) => (err ? reject(err) : resolve())),
      );
      await waitFor('the poison message is dead-lettered', 15_000, async () => ((await dead()) > deadBefore ? true : undefined));
      const issued = await issueKey(b, orgs[1]!, 'after-poison');
      expect(issued.status, JSON.stringify(issued.json)).to.equal(201);
    } finally {
      await connection.close();
    }
  });
});
