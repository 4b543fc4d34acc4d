/**
 * Issue 20's goals, one after another on one world of private engines, each printing its figure:
 *   npm run faults:goals [-- --nodes 2] [-- --only broker-kill,broker-hang,...]
 * Rates are what the goals name; where this machine cannot issue them, the figure says what was reached.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import amqp from 'amqplib';
import pg from 'pg';
import { startFaultWorld, type FaultWorld } from './world.js';
import { loadOn, msUntil, provisionTenant, readyz, sleep, type Tenant } from './scenario.js';
import { summarise, type MixedLoad, type LoadRates } from './load.js';
import { checkLedger } from './checker.js';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { probeSignedDeliveries, replayDispatch, setUpSignedFixtures, signedDispatch } from './signed-probes.js';

const args = process.argv.slice(2);
const opt = (name: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : undefined; };
const only = opt('only')?.split(',');
const nodeCount = Number(opt('nodes') ?? 1);

type Goal = (world: FaultWorld, tenant: Tenant) => Promise<Record<string, unknown>>;

const rateOf = (load: MixedLoad, op: string, from: number, to: number) => Math.round(load.window(from, to, op).length / ((to - from) / 1000));

async function withLoad<T>(world: FaultWorld, tenant: Tenant, rates: LoadRates, run: (load: MixedLoad) => Promise<T>): Promise<{ result: T; verdict: Awaited<ReturnType<typeof checkLedger>>; load: MixedLoad }> {
  const load = loadOn(world, tenant, rates);
  load.start();
  try {
    const result = await run(load);
    await sleep(2_000);
    await load.stop();
    return { result, verdict: await checkLedger(world.databaseUrl, tenant.orgId, load.ledger), load };
  } finally {
    await load.stop();
  }
}

const allReady = (world: FaultWorld) => async () => (await Promise.all(world.nodes.map((n) => readyz(n)))).every((s) => s === 200);

/** First write acknowledged after `since` (a dispatch or mutation: both go through the broker to an actor). */
const firstWriteAfter = (load: MixedLoad, since: number) =>
  load.samples.filter((s) => s.at >= since && s.outcome === 'ok' && (s.op === 'dispatch' || s.op === 'mutation')).map((s) => s.at + s.ms).sort((a, b) => a - b)[0];

/**
 * For diagnosis, once a second: the first node's event-loop lag and admission gate (its /metrics) and this runner's
 * own loop lag, so a latency can be placed in the node, in its socket queue or in the load generator.
 */
function watchNode(world: FaultWorld) {
  const rows: Array<{ at: number; line: string }> = [];
  const cpu: Array<{ at: number; ms: number }> = [];
  const runner = monitorEventLoopDelay({ resolution: 10 });
  runner.enable();
  const pick = (text: string, re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  const pid = world.nodes[0]!.child.pid!;
  const tick = 1000 / 100;
  let lastCpu = cpuMsOf(pid);
  let lastPg = postgresCpuMs(world);
  const timer = setInterval(async () => {
    const at = Date.now();
    const runnerMax = Math.round(runner.max / 1e6);
    runner.reset();
    const nowCpu = cpuMsOf(pid);
    cpu.push({ at, ms: nowCpu - lastCpu });
    // Postgres works in one process per connection: its CPU is the server's and its children's, summed.
    const pgNow = postgresCpuMs(world);
    const cpuLine = `node cpu ${Math.round((nowCpu - lastCpu) / tick)} %, postgres cpu ${Math.round((pgNow - lastPg) / tick)} %`;
    lastCpu = nowCpu;
    lastPg = pgNow;
    try {
      const text = await (await fetch(`${world.nodes[0]!.url}/metrics`, { signal: AbortSignal.timeout(900) })).text();
      const lagMax = Math.round(pick(text, /^nodejs_eventloop_lag_max_seconds(?:\{[^}]*\})? (\S+)/m) * 1000);
      const serving = pick(text, /^troupe_http_admission\{[^}]*state="serving"[^}]*\} (\S+)/m);
      const waiting = pick(text, /^troupe_http_admission\{[^}]*state="waiting"[^}]*\} (\S+)/m);
      const full = pick(text, /^troupe_http_shed_total\{[^}]*reason="queue_full"[^}]*\} (\S+)/m);
      const late = pick(text, /^troupe_http_shed_total\{[^}]*reason="waited_too_long"[^}]*\} (\S+)/m);
      rows.push({ at, line: `${cpuLine}, loop lag max ${lagMax} ms, admission serving ${serving} waiting ${waiting}, shed ${full} full ${late} late; runner loop lag max ${runnerMax} ms, scrape ${Date.now() - at} ms` });
    } catch {
      rows.push({ at, line: `${cpuLine}, /metrics unanswered within 900 ms; runner loop lag max ${runnerMax} ms` });
    }
  }, 1_000);
  return {
    during: (from: number, to: number) => rows.filter((r) => r.at >= from && r.at < to).map((r) => r.line).join(' | '),
    /** The node's CPU time (user + system, ms) over the whole seconds sampled in [from, to). */
    cpuMs: (from: number, to: number) => cpu.filter((c) => c.at > from && c.at <= to).reduce((n, c) => n + c.ms, 0),
    stop: () => { clearInterval(timer); runner.disable(); },
  };
}

/** Whether Postgres answers `select 1` on a new connection within 500 ms. */
async function answersQuery(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 500 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** CPU time so far of the private Postgres server and its backends (those gone since are not counted). */
function postgresCpuMs(world: FaultWorld): number {
  let pid: number;
  try { pid = world.engines.postgres.pid(); } catch { return NaN; }
  let children: number[] = [];
  try { children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number); } catch { /* gone */ }
  return [pid, ...children].reduce((n, p) => n + (cpuMsOf(p) || 0), 0);
}

/** A process's CPU time so far (user + system), from /proc (clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

const goals: Record<string, Goal> = {
  async 'broker-kill'(world, tenant) {
    const { result, verdict, load } = await withLoad(world, tenant, { heartbeatsPerSecond: 2_000, dispatchesPerSecond: 10, mutationsPerSecond: 5, sseReaders: 5 }, async (load) => {
      await sleep(5_000);
      const from = Date.now();
      await world.engines.rabbitmq.kill();
      await sleep(10_000);
      await world.engines.rabbitmq.start();
      const back = Date.now();
      await msUntil(allReady(world), 60_000);
      await sleep(5_000);
      const first = firstWriteAfter(load, back);
      return { from, back, firstConfirmedWriteMsAfterBrokerBack: first === undefined ? null : Math.round(first - back) };
    });
    if (opt('logs')) {
      console.error(`broker killed at ${result.from}, back at ${result.back}`);
      for (const n of world.nodes) {
        for (const line of n.lines) {
          if (!/broker|transport|shard|connect/i.test(line)) continue;
          try {
            const l = JSON.parse(line) as { time: number; msg: string; err?: unknown };
            if (l.time >= result.from) console.error(`  ${n.nodeId} +${l.time - result.back} ms after back: ${l.msg} ${l.err ? JSON.stringify(l.err).slice(0, 120) : ''}`);
          } catch { /* not JSON */ }
        }
      }
      for (let t = result.back - 1_000; t < result.back + 15_000; t += 1_000) {
        const w = load.window(t, t + 1_000).filter((s) => s.op !== 'heartbeat');
        const codes: Record<string, number> = {};
        for (const s of w) codes[`${s.op} ${s.status}`] = (codes[`${s.op} ${s.status}`] ?? 0) + 1;
        console.error(`  ${(t - result.back) / 1000}s after back: ${JSON.stringify(codes)}`);
      }
    }
    const hb = summarise(load.window(result.from, result.back + 5_000, 'heartbeat'));
    return {
      heartbeatsPerSecondReached: rateOf(load, 'heartbeat', result.from - 5_000, result.from), heartbeatsShed: load.shed.get('heartbeat') ?? 0,
      heartbeat5xx: hb.server_error + hb.unavailable, heartbeatTimeouts: hb.timeout,
      lostAcknowledged: verdict.lost, duplicated: verdict.duplicated, acknowledged: verdict.acknowledged,
      firstConfirmedWriteMsAfterBrokerBack: result.firstConfirmedWriteMsAfterBrokerBack,
    };
  },

  async 'broker-hang'(world, tenant) {
    const { result, verdict, load } = await withLoad(world, tenant, { heartbeatsPerSecond: 200, dispatchesPerSecond: 10, mutationsPerSecond: 5, sseReaders: 5 }, async () => {
      await sleep(3_000);
      const from = Date.now();
      world.engines.rabbitmq.freeze();
      const detectedMs = await msUntil(async () => (await Promise.all(world.nodes.map((n) => readyz(n)))).every((s) => s === 503), 60_000);
      await sleep(Math.max(0, 60_000 - (Date.now() - from)));
      world.engines.rabbitmq.thaw();
      const thawed = Date.now();
      const readyMs = await msUntil(allReady(world), 60_000);
      return { from, thawed, detectedMs, readyMs };
    });
    const during = summarise(load.window(result.from + (result.detectedMs ?? 0) + 1_000, result.thawed).filter((s) => s.op === 'dispatch' || s.op === 'mutation'));
    const inFlight = await Promise.all(world.nodes.map(async (n) => {
      const text = await (await fetch(`${n.url}/metrics`)).text();
      return Number(/^troupe_http_requests_in_flight\{[^}]*\} (\d+)/m.exec(text)?.[1] ?? NaN);
    }));
    return {
      detectedMs: result.detectedMs, writesWhileHung: during, readyMsAfterThaw: result.readyMs,
      requestsStillInFlightAfterRecovery: inFlight, clientRequestsTimedOut: summarise(load.samples).timeout,
      lostAcknowledged: verdict.lost, duplicated: verdict.duplicated,
    };
  },

  async 'postgres-stop'(world, tenant) {
    const gauges = watchNode(world);
    // Writes offered: dispatches (each walked through three transitions) and mutations; heartbeats alongside.
    const offered = Number(opt('writes') ?? 1_000);
    const rates = { heartbeatsPerSecond: Math.round(offered * 0.7), dispatchesPerSecond: Math.round(offered * 0.2), mutationsPerSecond: Math.round(offered * 0.1), sseReaders: 5 };
    const { result, verdict, load } = await withLoad(world, tenant, rates, async (load) => {
      // --warmup N: seconds of load before the kill (default 15); the rate "before" is its last 10 s (the first
      // seconds of load on a fresh node are its warm-up, not its steady state).
      await sleep(Math.max(10, Number(opt('warmup') ?? 15)) * 1_000);
      const from = Date.now();
      await world.engines.postgres.kill();
      await sleep(10_000);
      await world.engines.postgres.start();
      const back = Date.now();
      // When Postgres itself (not through the node) first answers a query: its crash recovery is part of "after the
      // restart", and no node can serve before it.
      const accepts = msUntil(() => answersQuery(world.databaseUrl), 30_000);
      await msUntil(allReady(world), 30_000);
      await sleep(6_000);
      return { from, back, load, postgresAnswersMs: await accepts };
    });
    const writes = (from: number, to: number) => load.window(from, to).filter((s) => s.op === 'dispatch' || s.op === 'mutation' || s.op === 'transition');
    if (opt('logs')) {
      console.error(`postgres killed at ${result.from}, restarted at ${result.back}`);
      for (let t = result.from - 2_000; t < result.back + 6_000; t += 1_000) {
        const w = writes(t, t + 1_000);
        const by = (o: string) => w.filter((s) => s.outcome === o).length;
        const codes: Record<string, number> = {};
        for (const s of w) codes[`${s.op} ${s.status}`] = (codes[`${s.op} ${s.status}`] ?? 0) + 1;
        console.error(`  ${(t - result.from) / 1000}s sent ${w.length}: ok ${by('ok')} 503 ${by('unavailable')} 4xx ${by('client_error')}, slowest ${Math.round(Math.max(0, ...w.map((s) => s.ms)))} ms ${JSON.stringify(codes)}`);
        console.error(`      ${gauges.during(t, t + 1_000)}`);
      }
    }
    gauges.stop();
    const firstRefusal = writes(result.from, result.back).filter((s) => s.outcome === 'unavailable').map((s) => s.at + s.ms - result.from).sort((a, b) => a - b)[0];
    // Full service: from the restart, the first second in which no write was refused.
    let fullServiceMs: number | null = null;
    for (let t = result.back; t < result.back + 6_000; t += 250) {
      const second = writes(t, t + 1_000);
      if (second.length > 0 && second.every((s) => s.outcome === 'ok' || s.outcome === 'client_error')) { fullServiceMs = t - result.back; break; }
    }
    const byCode = (samples: readonly { code?: string }[]) => {
      const codes: Record<string, number> = {};
      for (const x of samples) if (x.code !== undefined) codes[x.code] = (codes[x.code] ?? 0) + 1;
      return codes;
    };
    // Full service (decision 0058): writes acknowledged a second in the 5 s after the restart, against the 10 s before
    // the stop, counted by when each was answered; service is full when the ratio is at least 0.9. On a node offered
    // more than it can serve the refusals never stop (OVERLOADED), so "the first second without a refusal" says
    // nothing there; the acknowledged rate does, measured the same way whatever the load.
    const acked = (from: number, to: number) => load.window(from - 20_000, to)
      .filter((x) => (x.op === 'dispatch' || x.op === 'mutation' || x.op === 'transition') && x.outcome === 'ok' && x.at + x.ms >= from && x.at + x.ms < to).length;
    const ackedBefore = acked(result.from - 10_000, result.from) / 10;
    const ackedAfter = acked(result.back, result.back + 5_000) / 5;
    const ratio = ackedBefore === 0 ? null : Math.round((ackedAfter / ackedBefore) * 100) / 100;
    // The node's own part: the same ratio over the 5 s from when Postgres first answered after the restart.
    const answeredAt = result.back + (result.postgresAnswersMs ?? 0);
    const ratioFromAnswering = ackedBefore === 0 ? null : Math.round((acked(answeredAt, answeredAt + 5_000) / 5 / ackedBefore) * 100) / 100;
    // Breaker openings the node logged (a false one refuses every write for a trial interval at least).
    const breakerOpened = (from: number, to: number) => world.nodes[0]!.lines.filter((line) => {
      if (!line.includes('postgres is unreachable')) return false;
      try { const t = (JSON.parse(line) as { time: number }).time; return t >= from && t < to; } catch { return false; }
    }).map((line) => /unreachable \((.{0,60})/.exec(line)?.[1] ?? '?');
    const cpuPerAck = (from: number, to: number) => Math.round((gauges.cpuMs(from, to) / Math.max(1, acked(from, to))) * 100) / 100;
    const firstOkAfterRestart = writes(result.back, result.back + 6_000).filter((x) => x.outcome === 'ok').map((x) => x.at + x.ms - result.back).sort((a, b) => a - b)[0];
    if (opt('logs')) {
      const series: string[] = [];
      for (let t = result.back - 1_000; t < result.back + 5_000; t += 250) series.push(`${(t - result.back) / 1000}s ${acked(t, t + 250) * 4}/s`);
      console.error(`  acknowledged writes around the restart, by answer time: ${series.join(', ')}`);
      for (const line of world.nodes[0]!.lines) {
        try {
          const l = JSON.parse(line) as { time: number; msg: string; level: number };
          if (l.time >= result.from && l.level >= 40) console.error(`  node +${l.time - result.back} ms after the restart: ${l.msg.slice(0, 160)}`);
        } catch { /* not JSON */ }
      }
    }
    return {
      writesPerSecondOffered: offered,
      okWritesPerSecond10sBefore: Math.round(ackedBefore), okWritesPerSecond5sAfterRestart: Math.round(ackedAfter),
      fullServiceRatio: ratio, fullService: ratio !== null && ratio >= 0.9, ratioFromPostgresAnswering: ratioFromAnswering,
      breakerOpenedIn10sBefore: breakerOpened(result.from - 10_000, result.from), breakerOpenedIn5sAfterRestart: breakerOpened(result.back, result.back + 5_000),
      nodeCpuMsPerOkWriteBefore: cpuPerAck(result.from - 10_000, result.from), nodeCpuMsPerOkWriteAfter: cpuPerAck(result.back, result.back + 5_000),
      // Under a load the node cannot serve, refusals never stop (OVERLOADED): these say whether service came back.
      postgresAnswersMsAfterRestart: result.postgresAnswersMs ?? null,
      firstOkWriteMsAfterRestart: firstOkAfterRestart === undefined ? null : Math.round(firstOkAfterRestart),
      refusalsBeforeOutage: byCode(writes(result.from - 5_000, result.from)),
      refusalsDuringOutage: byCode(writes(result.from, result.back)),
      refusalsAfterRestart: byCode(writes(result.back + 1_000, result.back + 6_000)),
      writesPerSecondReached: Math.round(writes(result.from - 5_000, result.from).length / 5),
      // Before the fault, for comparison: a node that is already behind its offered load answers slowly either way.
      writesBeforeOutage: summarise(writes(result.from - 5_000, result.from)),
      firstRefusalMsAfterStop: firstRefusal === undefined ? null : Math.round(firstRefusal),
      okWritesLaterThan2sIntoOutage: writes(result.from + 2_000, result.back).filter((s) => s.outcome === 'ok').length,
      writesDuringOutage: summarise(writes(result.from, result.back)),
      fullServiceMsAfterRestart: fullServiceMs,
      lostAcknowledged: verdict.lost, duplicated: verdict.duplicated, acknowledged: verdict.acknowledged,
    };
  },

  async 'redis-hang'(world, tenant) {
    const node = world.nodes[0]!;
    const signed = await setUpSignedFixtures(node, tenant);
    const { result, verdict, load } = await withLoad(world, tenant, { heartbeatsPerSecond: 200, dispatchesPerSecond: 30, mutationsPerSecond: 5, sseReaders: 5 }, async () => {
      await sleep(10_000);
      const earlier = await signedDispatch(node, tenant, signed);
      const from = Date.now();
      world.engines.redis.freeze();
      await sleep(2_000);
      // Spec 5.5, 5.6, 7, 8: what signed deliveries are answered while Redis is frozen, and a nonce replayed after.
      const whileFrozen = await probeSignedDeliveries(node, tenant, signed, earlier.nonce);
      await sleep(Math.max(0, 10_000 - (Date.now() - from)));
      world.engines.redis.thaw();
      const to = Date.now();
      await msUntil(allReady(world), 30_000);
      const replayAfterThaw = await replayDispatch(node, tenant, signed, earlier.nonce);
      return { from, to, signedBefore: earlier.status, whileFrozen, replayAfterThaw };
    });
    const before = summarise(load.window(result.from - 10_000, result.from, 'dispatch'));
    const during = summarise(load.window(result.from, result.to, 'dispatch'));
    return {
      dispatchP99MsBefore: before.p99Ms, dispatchP99MsWhileRedisHung: during.p99Ms, p99RiseMs: Math.round((during.p99Ms - before.p99Ms) * 10) / 10,
      dispatchesWhileHung: during, lostAcknowledged: verdict.lost, duplicated: verdict.duplicated,
      // Status codes: webhooks 200/401/401/401 and dispatches 201/401/401 are the spec; a replayed nonce 201 while
      // the cache is down is its best effort (5.5), and 401 again once Redis answers.
      signedDispatchBeforeFreeze: result.signedBefore,
      webhooksWhileHung: result.whileFrozen.webhook, signedDispatchesWhileHung: result.whileFrozen.dispatch,
      nonceReplayedAfterThaw: result.replayAfterThaw,
    };
  },

  async poison(world, tenant) {
    const connection = await amqp.connect(world.engines.rabbitmq.url);
    try {
      const channel = await connection.createConfirmChannel();
      const { result, verdict, load } = await withLoad(world, tenant, { heartbeatsPerSecond: 100, dispatchesPerSecond: 40, mutationsPerSecond: 0, sseReaders: 0 }, async () => {
        await sleep(10_000);
        const from = Date.now();
        let sent = 0;
        while (Date.now() - from < 10_000) {
          for (let shard = 0; shard < 8; shard++) {
            channel.publish('troupe.shards', String(shard), Buffer.from('{"not": "an envelope"'), { persistent: true, messageId: `poison-${sent}` });
            sent += 1;
          }
          await channel.waitForConfirms();
          await sleep(100);
        }
        await sleep(3_000);
        return { from, to: from + 10_000, sent };
      });
      const deliveries: number[] = [];
      for (;;) {
        const msg = await channel.get('troupe.dead-letter', { noAck: false });
        if (msg === false) break;
        const deaths = (msg.properties.headers?.['x-death'] as Array<{ count: number }> | undefined) ?? [];
        const redelivered = Number(msg.properties.headers?.['x-delivery-count'] ?? 0);
        deliveries.push(Math.max(redelivered + 1, deaths.reduce((n, d) => n + d.count, 0)));
        channel.ack(msg);
      }
      const ackRate = (from: number, to: number) => load.window(from, to, 'dispatch').filter((s) => s.outcome === 'ok').length / ((to - from) / 1000);
      const before = ackRate(result.from - 10_000, result.from);
      const during = ackRate(result.from, result.to);
      return {
        poisonSent: result.sent, deadLettered: deliveries.length, maxDeliveriesBeforeDeadLetter: Math.max(0, ...deliveries),
        dispatchesPerSecondBefore: Math.round(before * 10) / 10, dispatchesPerSecondDuringPoison: Math.round(during * 10) / 10,
        throughputDropPercent: Math.round(((before - during) / before) * 1000) / 10,
        lostAcknowledged: verdict.lost, duplicated: verdict.duplicated,
      };
    } finally {
      await connection.close().catch(() => undefined);
    }
  },
};

async function main(): Promise<void> {
  let unhandled = 0;
  process.on('unhandledRejection', (err) => { unhandled += 1; console.error('unhandled rejection in the runner', err); });
  // --env KEY=VALUE,KEY=VALUE: extra environment for the nodes (admission budget, log level) when comparing settings.
  const env = Object.fromEntries((opt('env') ?? '').split(',').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const world = await startFaultWorld({ nodes: nodeCount, env });
  try {
    const tenant = await provisionTenant(world, 20);
    for (const [name, goal] of Object.entries(goals)) {
      if (only && !only.includes(name)) continue;
      await msUntil(allReady(world), 60_000);
      const started = Date.now();
      console.error(`goal ${name}: running`);
      const figure = await goal(world, tenant);
      console.log(JSON.stringify({ goal: name, nodes: nodeCount, seconds: Math.round((Date.now() - started) / 1000), ...figure }));
    }
    const crashed = world.nodes.filter((n) => n.exited()).map((n) => n.nodeId);
    // For diagnosis: each node's log lines (pino JSON) as the run left them.
    const logDir = opt('logs');
    if (logDir) for (const n of world.nodes) writeFileSync(path.join(logDir, `${n.nodeId}.log`), n.lines.join('\n'));
    console.log(JSON.stringify({ nodesCrashed: crashed, runnerUnhandledRejections: unhandled }));
  } finally {
    await world.close();
  }
}

main().then(() => process.exit(0), (err: unknown) => { console.error(err); process.exit(1); });
