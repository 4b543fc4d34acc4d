// Ceiling for G9 (PERFORMANCE.md, second round): plain `pg` doing what a session lifecycle must write at the least.
// CEILING_CLIENTS closed-loop clients (default 32) share a pool of CEILING_POOL connections (default 10); each
// repeats one lifecycle: five transactions (dispatch, claimed, running, finalizing, completed), each writing the
// session row (an INSERT, then UPDATEs) and appending one event row. The tables have the columns and indexes of
// Troupe's `sessions` and `session_transitions`. Runs CEILING_SECONDS seconds against CEILING_DATABASE_URL, then
// prints one JSON line: lifecycles finished in the window, the window, and this process's CPU seconds.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';

const url = process.env.CEILING_DATABASE_URL;
if (!url) throw new Error('CEILING_DATABASE_URL is required');
const seconds = Number(process.env.CEILING_SECONDS ?? '10');
const clients = Number(process.env.CEILING_CLIENTS ?? '32');
const pool = new pg.Pool({ connectionString: url, max: Number(process.env.CEILING_POOL ?? '10') });

await pool.query(`
  create table if not exists ceiling_sessions (
    id varchar(16) primary key, org_id uuid not null, project_id uuid not null, tracker_session_id text not null,
    tracker_issue text, prompt text not null, requested_by text not null, status text not null, worker_id text,
    last_worker_id text, epoch integer not null, cost_usd double precision not null default 0, error text, phase text,
    created_at timestamptz not null, updated_at timestamptz not null, claimed_at timestamptz, started_at timestamptz,
    finished_at timestamptz);
  create index if not exists ceiling_sessions_org_issue on ceiling_sessions (org_id, tracker_issue);
  create index if not exists ceiling_sessions_queue on ceiling_sessions (status, project_id, created_at);
  create index if not exists ceiling_sessions_worker on ceiling_sessions (worker_id);
  create index if not exists ceiling_sessions_org_created on ceiling_sessions (org_id, created_at, id);
  create table if not exists ceiling_transitions (
    id text primary key, session_id varchar(16) not null, org_id uuid not null, epoch integer not null,
    from_status text not null, to_status text not null, worker_id text, at timestamptz not null);
  create index if not exists ceiling_transitions_session on ceiling_transitions (session_id, at);
`);

const org = randomUUID();
const project = randomUUID();

async function transaction(statements: ReadonlyArray<[string, unknown[]]>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    for (const [sql, params] of statements) await client.query(sql, params);
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

const event = (id: string, from: string, to: string, worker: string | null): [string, unknown[]] => [
  'insert into ceiling_transitions (id, session_id, org_id, epoch, from_status, to_status, worker_id, at) values ($1, $2, $3, 1, $4, $5, $6, now())',
  [`${Date.now()}.${id}.1.${to}`, id, org, from, to, worker],
];

async function lifecycle(client: number): Promise<void> {
  const id = randomBytes(8).toString('hex');
  const worker = `worker-${client}`;
  await transaction([
    ['insert into ceiling_sessions (id, org_id, project_id, tracker_session_id, prompt, requested_by, status, epoch, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $7, 1, now(), now())',
      [id, org, project, `troupe:${randomUUID()}`, 'Fix the flaky test in the billing module', 'apiKey:bench', 'pending']],
    event(id, 'absent', 'pending', null),
  ]);
  let from = 'pending';
  for (const to of ['claimed', 'running', 'finalizing', 'completed']) {
    const terminal = to === 'completed';
    await transaction([
      [`update ceiling_sessions set status = $2, worker_id = $3, last_worker_id = $4, cost_usd = $5, updated_at = now(),
        claimed_at = coalesce(claimed_at, now()), started_at = case when $2 = 'running' then now() else started_at end,
        finished_at = case when $6 then now() else null end where id = $1`,
        [id, to, terminal ? null : worker, worker, 0.5, terminal]],
      event(id, from, to, worker),
    ]);
    from = to;
  }
}

const cpuBefore = process.cpuUsage();
const began = performance.now();
const endAt = began + seconds * 1000;
let finished = 0;
await Promise.all(Array.from({ length: clients }, async (_, client) => {
  while (performance.now() < endAt) {
    await lifecycle(client);
    if (performance.now() <= endAt) finished += 1;
  }
}));
const cpu = process.cpuUsage(cpuBefore);
await pool.end();
process.stdout.write(`${JSON.stringify({ lifecycles: finished, seconds: (endAt - began) / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`);
