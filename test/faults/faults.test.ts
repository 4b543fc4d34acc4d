/**
 * Invariant (issue 20, the short variant of the fault suite; `npm run soak` runs the long one): a node on private
 * Postgres, RabbitMQ and Redis, under steady mixed load (heartbeats, dispatches walked to completion, mutations and
 * cancels, SSE readers), survives SIGKILL and SIGSTOP of each engine and resets and latency on the links to them:
 * afterwards no acknowledged write is missing and no side effect happened twice, no request hung past its deadline,
 * refusals during an outage are 503 (never another 5xx), and the node is ready again within seconds of the heal.
 */
import { expect } from 'chai';
import { startFaultWorld, type FaultWorld } from './world.js';
import { loadOn, msUntil, provisionTenant, readyz, sleep, type Tenant } from './scenario.js';
import { summarise, type MixedLoad } from './load.js';
import { checkLedger } from './checker.js';

const skip = process.env.TEST_SKIP_FAULTS === '1';

(skip ? describe.skip : describe)('faults: one node on private engines under mixed load', function () {
  this.timeout(240_000);
  let world: FaultWorld;
  let tenant: Tenant;
  let load: MixedLoad;
  const faults: Array<[string, number]> = [];
  beforeEach(function () { faults.push([this.currentTest?.title.slice(0, 30) ?? '', Date.now()]); });

  before(async () => {
    world = await startFaultWorld({ nodes: 1 });
    tenant = await provisionTenant(world, 4);
    load = loadOn(world, tenant, { heartbeatsPerSecond: 80, dispatchesPerSecond: 8, mutationsPerSecond: 4, sseReaders: 4 });
    load.start();
    await sleep(2_000);
  });
  after(async () => {
    await load?.stop();
    await world?.close();
  });

  const node = () => world.nodes[0]!;
  const readyAgainWithin = async (ms: number) => {
    const took = await msUntil(async () => (await readyz(node())) === 200, ms);
    expect(took, 'ready again after the heal').not.to.equal(undefined);
    return took!;
  };

  it('broker SIGKILLed for 5 s: heartbeats unaffected, writes refused with 503, ready soon after it is back', async () => {
    const from = Date.now();
    await world.engines.rabbitmq.kill();
    await sleep(5_000);
    await world.engines.rabbitmq.start();
    await readyAgainWithin(15_000);
    const heartbeats = summarise(load.window(from, Date.now(), 'heartbeat'));
    expect(heartbeats.server_error + heartbeats.unavailable + heartbeats.timeout, JSON.stringify(heartbeats)).to.equal(0);
    expect(summarise(load.window(from, Date.now())).server_error).to.equal(0);
  });

  it('broker frozen (SIGSTOP) for 12 s: noticed within 6 s, refusals answered at once, ready again after the thaw', async () => {
    const from = Date.now();
    world.engines.rabbitmq.freeze();
    const noticed = await msUntil(async () => (await readyz(node())) === 503, 10_000);
    await sleep(Math.max(0, 12_000 - (Date.now() - from)));
    world.engines.rabbitmq.thaw();
    await readyAgainWithin(20_000);
    expect(noticed, 'readiness turns 503 while the broker is frozen').not.to.equal(undefined);
    expect(noticed!).to.be.below(6_000);
    const refused = summarise(load.window(from + noticed! + 1_000, from + 12_000, 'dispatch'));
    expect(refused.unavailable, JSON.stringify(refused)).to.be.above(0);
    expect(refused.ok + refused.server_error + refused.timeout, JSON.stringify(refused)).to.equal(0);
    expect(refused.p99Ms, 'a refusal is answered at once, not after a deadline').to.be.below(1_000);
  });

  it('Postgres SIGKILLed for 4 s: writes refused with 503 while it is down, ready soon after the restart', async () => {
    const from = Date.now();
    await world.engines.postgres.kill();
    await sleep(4_000);
    await world.engines.postgres.start();
    await readyAgainWithin(10_000);
    const during = summarise(load.window(from + 2_000, from + 4_000, 'dispatch'));
    expect(during.ok, `dispatches while Postgres is down: ${JSON.stringify(during)}`).to.equal(0);
    expect(summarise(load.window(from, Date.now())).server_error).to.equal(0);
  });

  it('Redis frozen (SIGSTOP) for 5 s: no 5xx, nothing hangs, dispatches no slower once it is noticed', async () => {
    const from = Date.now();
    world.engines.redis.freeze();
    await sleep(5_000);
    world.engines.redis.thaw();
    await readyAgainWithin(10_000);
    const all = summarise(load.window(from, Date.now()));
    expect(all.server_error + all.timeout, JSON.stringify(all)).to.equal(0);
    // Each cache command would otherwise wait out its 500 ms timeout: two per dispatch (its rate limits).
    const before = summarise(load.window(from - 5_000, from, 'dispatch'));
    const frozen = summarise(load.window(from + 1_500, from + 5_000, 'dispatch'));
    expect(frozen.ok, JSON.stringify(frozen)).to.be.above(0);
    expect(frozen.p99Ms - before.p99Ms, `p99 ${before.p99Ms} ms before, ${frozen.p99Ms} ms while frozen`).to.be.below(400);
  });

  it('links reset and slowed: the broker link reset, Postgres 150 ms slower for 3 s', async () => {
    const from = Date.now();
    world.proxies.rabbitmq.resetAll();
    world.proxies.postgres.latencyMs = 150;
    await sleep(3_000);
    world.proxies.postgres.heal();
    await readyAgainWithin(15_000);
    expect(summarise(load.window(from, Date.now())).server_error).to.equal(0);
  });

  it('loses no acknowledged write and repeats no side effect', async () => {
    await sleep(1_000);
    await load.stop();
    const verdict = await checkLedger(world.databaseUrl, tenant.orgId, load.ledger);
    if (verdict.lostTotal > 0) {
      const lost = [...load.ledger.dispatched].filter(([id]) => verdict.examples.some((e) => e.includes(id)));
      console.log(`      faults: ${JSON.stringify(faults)}\n      lost acknowledged at: ${JSON.stringify(lost)}`);
    }
    const all = summarise(load.samples);
    console.log(`      acknowledged ${JSON.stringify(verdict.acknowledged)}; requests ${JSON.stringify(all)}`);
    expect(verdict.acknowledged.dispatches).to.be.above(50);
    expect(verdict.lostTotal, verdict.examples.join('\n')).to.equal(0);
    expect(verdict.duplicatedTotal, verdict.examples.join('\n')).to.equal(0);
    expect(all.timeout, 'no request hung past its 10 s deadline').to.equal(0);
    expect(node().exited(), 'the node never crashed').to.equal(false);
  });
});
