/**
 * Invariant (issue 20, the short variant of the fault suite; `npm run soak` runs the long one): a node on private
 * Postgres, RabbitMQ and Redis, under steady mixed load (heartbeats, dispatches walked to completion, mutations and
 * cancels, SSE readers), survives SIGKILL and SIGSTOP of each engine and resets and latency on the links to them:
 * afterwards no acknowledged write is missing and no side effect happened twice, no request hung past its deadline,
 * refusals during an outage are 503 (never another 5xx), and the node is ready again within seconds of the heal.
 */
import { expect } from 'chai';
import { saveNodeLogsIfFailed, startFaultWorld, type FaultWorld } from './world.js';
import { loadOn, msUntil, provisionTenant, readyz, sleep, timedDispatch, type Tenant } from './scenario.js';
import { summarise, type MixedLoad } from './load.js';
import { checkLedger } from './checker.js';
import { probeSignedDeliveries, replayDispatch, setUpSignedFixtures, signedDispatch, type SignedFixtures } from './signed-probes.js';

const skip = process.env.TEST_SKIP_FAULTS === '1';

(skip ? describe.skip : describe)('faults: one node on private engines under mixed load', function () {
  this.timeout(240_000);
  let world: FaultWorld;
  let tenant: Tenant;
  let load: MixedLoad;
  let signed: SignedFixtures;
  const faults: Array<[string, number]> = [];
  beforeEach(function () { faults.push([this.currentTest?.title.slice(0, 30) ?? '', Date.now()]); });

  before(async () => {
    world = await startFaultWorld({ nodes: 1 });
    tenant = await provisionTenant(world, 4);
    signed = await setUpSignedFixtures(world.nodes[0]!, tenant);
    load = loadOn(world, tenant, { heartbeatsPerSecond: 80, dispatchesPerSecond: 8, mutationsPerSecond: 4, sseReaders: 4 });
    load.start();
    await sleep(2_000);
  });
  after(async function () {
    await load?.stop();
    saveNodeLogsIfFailed(this, world);
    await world?.close();
  });

  const node = () => world.nodes[0]!;
  const readyAgainWithin = async (ms: number) => {
    const took = await msUntil(async () => (await readyz(node())) === 200, ms);
    expect(took, 'ready again after the heal').not.to.equal(undefined);
    return took!;
  };

  it('broker SIGKILLed for 5 s: heartbeats unaffected, writes refused with 503, a write confirmed ≤ 5 s after it is back', async () => {
    const from = Date.now();
    await world.engines.rabbitmq.kill();
    await sleep(5_000);
    await world.engines.rabbitmq.start();
    const back = Date.now();
    await readyAgainWithin(15_000);
    // Issue 20: "first confirmed publish ≤ 5 s after the broker is back": a dispatch or mutation answered 2xx, both
    // of which go through the broker to an actor. A sample is recorded when its answer arrives, so wait for one.
    const firstWrite = () => load.samples
      .filter((s) => s.at >= back && s.outcome === 'ok' && (s.op === 'dispatch' || s.op === 'mutation'))
      .map((s) => s.at + s.ms).sort((a, b) => a - b)[0];
    await msUntil(() => firstWrite() !== undefined, 15_000);
    expect(firstWrite(), 'a write confirmed after the broker is back').not.to.equal(undefined);
    expect(firstWrite()! - back, 'first confirmed write after the broker is back (ms)').to.be.below(5_000);
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

  it('Postgres SIGKILLed for 4 s: writes refused with a 503 and Retry-After within 2 s while it is down, writes acknowledged again ≤ 5 s after the restart', async () => {
    const from = Date.now();
    await world.engines.postgres.kill();
    await sleep(1_000);
    const probes = await Promise.all(Array.from({ length: 5 }, () => timedDispatch(node(), tenant)));
    await sleep(Math.max(0, 4_000 - (Date.now() - from)));
    await world.engines.postgres.start();
    const back = Date.now();
    await readyAgainWithin(10_000);
    const firstOkAfter = () => load.samples.filter((s) => s.at >= back && s.op === 'dispatch' && s.outcome === 'ok').map((s) => s.at + s.ms).sort((a, b) => a - b)[0];
    // A sample is recorded when its answer arrives: wait for one, then judge when it was answered.
    await msUntil(() => firstOkAfter() !== undefined, 10_000);
    for (const probe of probes) {
      expect(probe, 'a dispatch while Postgres is down').to.include({ status: 503, code: 'STORAGE_UNAVAILABLE', retryAfter: '1' });
      expect(probe.ms, 'refused within 2 s').to.be.below(2_000);
    }
    const during = summarise(load.window(from + 1_000, from + 4_000).filter((s) => s.op === 'dispatch' || s.op === 'mutation'));
    expect(during.ok, `writes issued while Postgres is down: ${JSON.stringify(during)}`).to.equal(0);
    expect(during.unavailable, JSON.stringify(during)).to.be.above(0);
    // Issue 20: "writes answer 503 within 2 s during the outage" (the load's own clock, on a shared machine).
    expect(during.p99Ms, JSON.stringify(during)).to.be.below(2_000);
    const firstOk = firstOkAfter();
    expect(firstOk, 'a dispatch acknowledged after the restart').not.to.equal(undefined);
    expect(firstOk! - back, 'writes acknowledged again within 5 s of the restart').to.be.below(5_000);
    expect(summarise(load.window(from, Date.now())).server_error).to.equal(0);
  });

  it('Postgres frozen (SIGSTOP, server and backends) for 10 s: requests answered 503 rather than hung, none past its deadline, writes acknowledged again after the thaw', async () => {
    const from = Date.now();
    world.engines.postgres.freeze();
    await sleep(1_000);
    // Sent while every pooled connection may hold a query the frozen server will not answer.
    const probes = await Promise.all(Array.from({ length: 5 }, () => timedDispatch(node(), tenant)));
    await sleep(Math.max(0, 10_000 - (Date.now() - from)));
    world.engines.postgres.thaw();
    const thawed = Date.now();
    await readyAgainWithin(15_000);
    const firstOkAfter = () => load.samples.filter((s) => s.at >= thawed && s.op === 'dispatch' && s.outcome === 'ok').map((s) => s.at + s.ms).sort((a, b) => a - b)[0];
    await msUntil(() => firstOkAfter() !== undefined, 10_000);
    for (const probe of probes) {
      expect(probe.status, JSON.stringify(probe)).to.equal(503);
      expect(probe.retryAfter, JSON.stringify(probe)).to.equal('1');
      // The query deadline (3 s), a new connection's timeout (3 s) that opens the breaker, or the pool's acquire timeout (5 s).
      expect(probe.ms, `a dispatch while Postgres is frozen: ${JSON.stringify(probe)}`).to.be.below(7_000);
    }
    const during = summarise(load.window(from, thawed));
    expect(during.timeout, `no request hung past its 10 s deadline: ${JSON.stringify(during)}`).to.equal(0);
    expect(during.server_error, JSON.stringify(during)).to.equal(0);
    const writes = summarise(load.window(from + 1_000, thawed).filter((s) => s.op === 'dispatch' || s.op === 'mutation'));
    expect(writes.unavailable, JSON.stringify(writes)).to.be.above(0);
    expect(writes.p99Ms, `writes while frozen answered within the deadlines: ${JSON.stringify(writes)}`).to.be.below(7_000);
    expect(firstOkAfter(), 'a dispatch acknowledged after the thaw').not.to.equal(undefined);
    expect(firstOkAfter()! - thawed, 'writes acknowledged again within 5 s of the thaw').to.be.below(5_000);
  });

  it('Redis frozen (SIGSTOP) for 5 s: no 5xx, nothing hangs, dispatches no slower once it is noticed; signatures hold', async () => {
    // A nonce the cache records while it works: replayed during the freeze and after it.
    const earlier = await signedDispatch(node(), tenant, signed);
    expect(earlier.status, 'a signed dispatch before the freeze').to.equal(201);
    const from = Date.now();
    world.engines.redis.freeze();
    await sleep(1_500);
    const whileFrozen = await probeSignedDeliveries(node(), tenant, signed, earlier.nonce);
    await sleep(Math.max(0, 5_000 - (Date.now() - from)));
    world.engines.redis.thaw();
    await readyAgainWithin(10_000);
    // Spec 5.6, 7, 8: signature, five-minute window and webhook-id replay store (the database) hold with no cache.
    expect(whileFrozen.webhook, 'incident webhooks while Redis is frozen').to.deep.equal({ valid: 200, badSignature: 401, staleTimestamp: 401, replayedId: 401 });
    // Spec 5.5: signature and ±300 s always; nonce replay rejection is best effort, skipped while the cache is down.
    expect(whileFrozen.dispatch, 'signed dispatches while Redis is frozen').to.deep.equal({ valid: 201, badSignature: 401, staleTimestamp: 401, replayedNonce: 201 });
    expect(await replayDispatch(node(), tenant, signed, earlier.nonce), 'the nonce replayed once Redis is back').to.equal(401);
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
