// Benchmark of reading a long transcript (issue 35 §4): one session with `--entries` (1,000,000) transcript entries,
// read from the first to the last page through `GET /api/public/sessions/{id}/transcript?after=&limit=`, as a
// reviewer's CLI or a download pages through it. Every page's latency is kept (p50, p99, worst), and the node's
// live memory (after a full collection) and resident memory are read every 100 pages: a reader of a long transcript
// must not make the node hold more of it. The node runs with the options `npm start` gives it.
//
//   taskset -c 1 npx tsx ops/bench/transcript-read.ts [--entries 1000000] [--limit 1000]
//
// The node runs on Postgres (a schema of its own, dropped afterwards) on core 0. The session is made through the API
// and run by a registered worker; its entries are then written in SQL (`generate_series`) in the rows the node writes,
// output lines of about 100 bytes with a status entry every 1,000, and the head set to match.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../secrets.js';
import { rssKb } from './process-readings.js';
import { call, dropSchema, pct, printTable, runBench, startFlags, startServer, type RunningServer } from './harness.js';
import { settledLiveKb } from './slow-readers-window.js';

const { values } = parseArgs({ options: { entries: { type: 'string', default: '1000000' }, limit: { type: 'string', default: '1000' } } });
const ENTRIES = Number(values.entries);
const LIMIT = Number(values.limit);
const GOAL_P99_MS = 20;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const postgresUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const schema = `bench_transcript_read_${randomBytes(4).toString('hex')}`;
const adminToken = generateAdminToken();
const memoryFile = path.join(os.tmpdir(), `${schema}-memory.json`);
let server: RunningServer | undefined;

async function seed(db: pg.Client, orgId: string, sessionKey: string): Promise<void> {
  const started = performance.now();
  await db.query(`delete from session_transcript_entries where org_id = $1 and session_id = $2`, [orgId, sessionKey]);
  await db.query(
    `insert into session_transcript_entries (org_id, session_id, seq, at, kind, run, text, data)
     select $1, $2, n, now() - make_interval(secs => ($3::int - n) / 1000.0), case when n % 1000 = 0 then 4 else 1 end, 1,
            case when n % 1000 = 0 then 'running → running' else 'line ' || n || ' compiling module ' || (n % 977) || ' of the build, no warnings so far' end,
            case when n % 1000 = 0 then '{"status":"running","previousStatus":"running"}'::jsonb end
       from generate_series(1, $3::int) n`,
    [orgId, sessionKey, ENTRIES],
  );
  await db.query(
    `insert into session_transcript_heads (org_id, session_id, last_seq, bytes, run, updated_at) values ($1, $2, $3::bigint, $3::bigint * 60, 1, now())
     on conflict (org_id, session_id) do update set last_seq = excluded.last_seq, bytes = excluded.bytes`,
    [orgId, sessionKey, ENTRIES],
  );
  await db.query('analyze session_transcript_entries');
  process.stderr.write(`seeded ${ENTRIES} entries in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}

async function main(): Promise<number> {
  server = await startServer(path.join(root, 'ops/bench/bench-node.ts'), {
    TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info',
    TROUPE_NODE_ID: 'bench-transcript-read', REDIS_URL: undefined, AMQP_URL: undefined, DATABASE_URL: postgresUrl, TROUPE_DATABASE_SCHEMA: schema,
    BENCH_MEMORY_FILE: memoryFile,
  }, '0', [...startFlags(root), '--expose-gc', '--import', path.join(root, 'ops/bench/gc-on-signal.mjs')]);
  const base = `http://127.0.0.1:${server.port}`;
  const org = await call(base, 'POST', '/api/admin/orgs', adminToken, { name: 'Reader', owner: { email: 'reader@bench.test' } });
  const apiKey = org.apiKey.fullKey as string;
  const id = (await call(base, 'POST', '/api/agent-dispatch', apiKey, { projectId: org.project.id, prompt: 'A long build' })).sessionId as string;
  const db = new pg.Client({ connectionString: postgresUrl });
  await db.connect();
  await db.query(`set search_path to "${schema}"`);
  const { rows } = await db.query('select id, org_id from sessions where public_id = $1', [id]);
  await seed(db, rows[0].org_id as string, rows[0].id as string);
  await db.end();

  process.stderr.write(`reading ${ENTRIES} entries, ${LIMIT} a page...\n`);
  const latencies: number[] = [];
  const rss: number[] = [rssKb(server.child.pid!)];
  const live: number[] = [await settledLiveKb(server.child.pid!, memoryFile)];
  let after = 0;
  let read = 0;
  for (let page = 0; ; page++) {
    const t0 = performance.now();
    const reply = await call(base, 'GET', `/api/public/sessions/${id}/transcript?after=${after}&limit=${LIMIT}`, apiKey);
    latencies.push(performance.now() - t0);
    read += reply.entries.length;
    if (reply.entries.length > 0 && reply.entries[0].seq !== after + 1) throw new Error(`the page after ${after} began at ${reply.entries[0].seq}`);
    if (page % 100 === 99) {
      rss.push(rssKb(server.child.pid!));
      live.push(await settledLiveKb(server.child.pid!, memoryFile));
    }
    if (reply.next === null) break;
    after = reply.next;
  }
  rss.push(rssKb(server.child.pid!));
  live.push(await settledLiveKb(server.child.pid!, memoryFile));
  if (read !== ENTRIES) throw new Error(`read ${read} entries, not ${ENTRIES}`);
  const p99 = pct(latencies, 99);
  const mb = (kb: number) => (kb / 1024).toFixed(1);
  printTable([
    { measure: 'entries read, pages', value: `${read}, ${latencies.length} of ${LIMIT}` },
    { measure: 'page p50 ms', value: pct(latencies, 50).toFixed(2) },
    { measure: `page p99 ms (goal ≤ ${GOAL_P99_MS})`, value: p99.toFixed(2) },
    { measure: 'page worst ms', value: Math.max(...latencies).toFixed(2) },
    { measure: 'first half / second half p99 ms', value: `${pct(latencies.slice(0, latencies.length / 2), 99).toFixed(2)} / ${pct(latencies.slice(latencies.length / 2), 99).toFixed(2)}` },
    { measure: 'node live heap + external MB after a full GC: before, after, highest', value: `${mb(live[0]!)}, ${mb(live.at(-1)!)}, ${mb(Math.max(...live))}` },
    { measure: 'node RSS MB: before, after, highest', value: `${mb(rss[0]!)}, ${mb(rss.at(-1)!)}, ${mb(Math.max(...rss))}` },
  ]);
  return p99 <= GOAL_P99_MS ? 0 : 1;
}

async function cleanup(): Promise<void> {
  await server?.stop().catch(() => undefined);
  rmSync(memoryFile, { force: true });
  await dropSchema(postgresUrl, schema);
}

runBench(main, cleanup);
