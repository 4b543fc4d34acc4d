// Benchmark (PERFORMANCE.md G3b): the batched liveness writer (CoalescingWriter + writeLiveness: coalesced per
// daemon, sorted keys, rows locked in key order) on Postgres, with W concurrent writers (as W nodes would run)
// over overlapping random sets of workers, against the `unnest` 1,000-row upsert ceiling on a bare two-column
// table (on one connection and on W). Rounds are interleaved; prints rows/s, the ratio to the better ceiling, and
// deadlocks; exits 1 when the ratio is below 0.50 or any writer deadlocked.
//   npx tsx ops/bench/liveness-writer.ts [--writers 4] [--workers 100000] [--batch 1000] [--rounds 3] [--duration 5]
// DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) names the server; a throw-away database is
// created there and dropped.
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { Knex } from 'knex';
import { Counter, Histogram, Registry } from 'prom-client';
import { createDb } from '../../storage/db.js';
import { migrate } from '../../storage/migrations/runner.js';
import { insertOrg } from '../../storage/identity/orgs.js';
import { writeLiveness } from '../../storage/sessions/daemon.js';
import { CoalescingWriter } from '../../actors/services/daemon/services.js';
import { silentLogger } from '../kernel/logger.js';
import { median, printTable } from './harness.js';

const { values } = parseArgs({
  options: {
    writers: { type: 'string', default: '4' },
    workers: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
  },
});
const writers = Number(values.writers);
const workerCount = Number(values.workers);
const batch = Number(values.batch);
const rounds = Number(values.rounds);
const durationMs = Number(values.duration) * 1000;
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `troupe_bench_lw_${randomBytes(4).toString('hex')}`;
const dbUrl = url.replace(/\/[^/]*$/, `/${dbName}`);

const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`create database ${dbName}`);
const knexes: Knex[] = [];
let failed = false;
try {
  const setup = await createDb({ databaseUrl: dbUrl, poolMax: 2 });
  knexes.push(setup);
  await migrate(setup);
  const org = await insertOrg(setup, { id: randomUUID(), name: 'Bench', slug: `bench-${randomUUID().slice(0, 8)}`, plan: 'free' });
  const ids = Array.from({ length: workerCount }, () => randomUUID());
  const registrationId = randomUUID();
  const t0 = new Date(Date.now() - 3600_000);
  for (let i = 0; i < ids.length; i += 5000) {
    await setup('daemon_workers').insert(ids.slice(i, i + 5000).map((id) => ({
      id, org_id: org.id, registration_id: registrationId, hostname: 'h', max_agents: 1, project_ids: '[]', registered_at: t0, last_seen_at: t0,
    })));
  }
  await setup.raw('create table ceiling_liveness (id text primary key, at timestamptz not null)');
  await setup.raw('insert into ceiling_liveness select id, ? from daemon_workers', [t0]);
  // One connection per writer, as one per node.
  const nodes = await Promise.all(Array.from({ length: writers }, () => createDb({ databaseUrl: dbUrl, poolMax: 1 })));
  knexes.push(...nodes);

  let clock = Date.now();
  /** A random batch of distinct worker ids (unsorted: sorting is the writer's job). */
  const pick = (): string[] => {
    const chosen = new Set<string>();
    while (chosen.size < batch) chosen.add(ids[Math.floor(Math.random() * ids.length)]!);
    return [...chosen];
  };

  async function ceiling(connections: Knex[]): Promise<number> {
    let rows = 0;
    const end = Date.now() + durationMs;
    const started = Date.now();
    await Promise.all(connections.map(async (k) => {
      while (Date.now() < end) {
        const keys = pick().sort();
        const at = keys.map(() => new Date(++clock).toISOString());
        await k.raw(
          `insert into ceiling_liveness (id, at) select * from unnest(?::text[], ?::timestamptz[])
           on conflict (id) do update set at = excluded.at`, [keys, at]);
        rows += keys.length;
      }
    }));
    return rows / ((Date.now() - started) / 1000);
  }

  const registry = new Registry();
  const batchSize = new Histogram({ name: 'b', help: 'b', labelNames: ['what'], registers: [registry] });
  const failures = new Counter({ name: 'f', help: 'f', labelNames: ['what'], registers: [registry] });
  async function liveness(): Promise<{ rowsPerSecond: number; deadlocks: number; failed: number }> {
    let rows = 0;
    let deadlocks = 0;
    let other = 0;
    const end = Date.now() + durationMs;
    const started = Date.now();
    await Promise.all(nodes.map(async (k) => {
      const writer = new CoalescingWriter<number>(async (b) => {
        try {
          await writeLiveness(k, b);
          rows += b.size;
        } catch (err) {
          if ((err as { code?: string }).code === '40P01') deadlocks += 1;
          else other += 1;
          throw err;
        }
      }, { flushMs: 3_600_000, maxBuffered: Number.MAX_SAFE_INTEGER, log: silentLogger(), what: 'bench', batchSize, failures });
      try {
        while (Date.now() < end) {
          // Each heartbeat records; the same worker twice in one batch is coalesced to its latest time.
          for (const id of pick()) writer.record(id, ++clock);
          await writer.flush();
        }
      } finally {
        writer.stop();
      }
    }));
    return { rowsPerSecond: rows / ((Date.now() - started) / 1000), deadlocks, failed: other };
  }

  const results = { one: [] as number[], many: [] as number[], writer: [] as number[], ratio: [] as number[] };
  let deadlocks = 0;
  let otherFailures = 0;
  for (let r = 1; r <= rounds; r++) {
    const one = await ceiling([nodes[0]!]);
    const many = await ceiling(nodes);
    const w = await liveness();
    results.one.push(one); results.many.push(many); results.writer.push(w.rowsPerSecond);
    results.ratio.push(w.rowsPerSecond / Math.max(one, many));
    deadlocks += w.deadlocks; otherFailures += w.failed;
    process.stderr.write(`round ${r}/${rounds}: ceiling 1 conn ${Math.round(one)} rows/s, ${writers} conns ${Math.round(many)}; writer ${Math.round(w.rowsPerSecond)} (deadlocks ${w.deadlocks})\n`);
  }
  console.log(`\nG3b: ${writers} writers, ${workerCount} workers, batches of ${batch}, ${rounds} rounds of ${durationMs / 1000}s on Postgres`);
  printTable([
    { config: 'ceiling unnest upsert, 1 connection', 'rows/s (median)': Math.round(median(results.one)), deadlocks: 0 },
    { config: `ceiling unnest upsert, ${writers} connections`, 'rows/s (median)': Math.round(median(results.many)), deadlocks: 0 },
    { config: `liveness writer, ${writers} writers`, 'rows/s (median)': Math.round(median(results.writer)), deadlocks },
  ]);
  const ratio = median(results.ratio);
  const ok = ratio >= 0.5 && deadlocks === 0 && otherFailures === 0;
  console.log(`\nG3b writer / better ceiling: ${ratio.toFixed(2)} (rounds ${results.ratio.map((v) => v.toFixed(2)).join(' ')}), wanted >= 0.50 with 0 deadlocks: ${ok ? 'yes' : 'NO'}`);
  failed = !ok;
} finally {
  await Promise.all(knexes.map((k) => k.destroy()));
  await admin.query(`drop database if exists ${dbName} with (force)`).catch(() => undefined);
  await admin.end();
}
process.exit(failed ? 1 : 0);
