/**
 * G11: time from `npm start` to a ready node (`GET /readyz` answers 200), with migrations current and the build up
 * to date, against the way the node used to start (`tsx ops/main.ts`, compiling TypeScript on every start).
 * Rounds interleave the two ways so both see the same machine. Real engines by default (`DATABASE_URL`,
 * `REDIS_URL`, `AMQP_URL` from the environment or the local defaults); `--embedded` for PGlite and the in-process
 * transport. The first start of each way is a warm-up (it applies migrations or builds) and is not counted.
 *
 *   npx tsx ops/bench/start.ts [--rounds 7] [--embedded]
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { median, printTable } from './harness.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, embedded: { type: 'boolean', default: false } } });
const rounds = Math.min(Math.max(Number(values.rounds) || 7, 1), 50);
const dataDir = mkdtempSync(path.join(tmpdir(), 'troupe-bench-start-'));
const database = `troupe_bench_start_${process.pid}`;

const engines: NodeJS.ProcessEnv = values.embedded
  ? { TROUPE_DATA_DIR: dataDir }
  : {
      DATABASE_URL: `${process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'}`.replace(/\/[^/]*$/, `/${database}`),
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      AMQP_URL: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
      TROUPE_AMQP_PREFIX: `benchstart${process.pid}`,
      TROUPE_MASTER_KEY: randomBytes(32).toString('base64'),
      TROUPE_ADMIN_TOKEN: `adm_${randomBytes(16).toString('hex')}`,
      TROUPE_DATA_DIR: dataDir,
    };

const ways: Record<string, string[]> = {
  'npm start (compiled)': ['npm', 'start', '--silent'],
  'tsx ops/main.ts (before)': [process.execPath, '--import', 'tsx', 'ops/main.ts'],
};

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  server.close();
  return port;
}

/** Milliseconds from spawning the command until /readyz answers 200; the process is then stopped with SIGTERM. */
async function timeToReady(command: string[]): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(command[0]!, command.slice(1), {
    env: { ...process.env, ...engines, PORT: String(port), HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'warn', TROUPE_SHUTDOWN_DELAY_MS: '0' },
    stdio: 'ignore',
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited with ${child.exitCode} before it was ready`);
      const status = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0);
      if (status === 200) return performance.now() - started;
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
  }
}

if (!values.embedded) spawnSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-c', `create database ${database}`], { stdio: 'ignore' });
process.stdout.write(`start to ready on ${values.embedded ? 'embedded' : 'real'} engines, ${rounds} rounds after a warm-up\n`);
const samples = new Map<string, number[]>(Object.keys(ways).map((name) => [name, []]));
try {
  for (const command of Object.values(ways)) await timeToReady(command);
  for (let round = 1; round <= rounds; round++) {
    for (const [name, command] of Object.entries(ways)) samples.get(name)!.push(await timeToReady(command));
    process.stdout.write(`round ${round}: ${[...samples].map(([n, s]) => `${n} ${Math.round(s.at(-1)!)} ms`).join(', ')}\n`);
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
  if (!values.embedded) spawnSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-c', `drop database if exists ${database}`], { stdio: 'ignore' });
}
printTable([...samples].map(([way, s]) => ({ way, 'median ms': Math.round(median(s)), 'min ms': Math.round(Math.min(...s)), 'max ms': Math.round(Math.max(...s)) })));
