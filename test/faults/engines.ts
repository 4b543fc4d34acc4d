import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Private engines for the fault tests (issue 20): a Postgres cluster, a RabbitMQ node and a Redis of their own, on
 * spare loopback ports, with their own data dirs (and for RabbitMQ its own node name and distribution port), so a
 * SIGKILL or SIGSTOP here never touches the machine's shared services on the default ports. Every process is
 * started as the engine's server process itself (no wrapper between), so a signal reaches the engine, and is
 * stopped by its PID at the end.
 */
export interface PrivateEngine {
  readonly name: 'postgres' | 'rabbitmq' | 'redis';
  readonly port: number;
  readonly url: string;
  /** The server process's PID (changes on restart). */
  pid(): number;
  /** SIGKILL: no shutdown code runs. */
  kill(): Promise<void>;
  /** SIGSTOP: the process is frozen, its sockets stay open and nothing answers. */
  freeze(): void;
  /** SIGCONT. */
  thaw(): void;
  /** Starts it again on the same port and data (after `kill`). */
  start(): Promise<void>;
  /** Stops it for good and removes its data. */
  destroy(): Promise<void>;
}

/** A port nothing listens on now: asked of the kernel, then released. */
export async function sparePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  server.close();
  await once(server, 'close');
  return port;
}

async function waitFor(what: string, probe: () => Promise<boolean> | boolean, withinMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`${what}: the process exited with ${child.exitCode}`);
    if (await Promise.resolve(probe()).catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

const running = new Set<ChildProcess>();
process.once('exit', () => { for (const child of running) child.kill('SIGKILL'); });

function track(child: ChildProcess, log: string[]): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  const keep = (chunk: Buffer) => {
    log.push(chunk.toString());
    if (log.length > 200) log.splice(0, 100);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return child;
}

/** The PIDs of a process's children (Postgres's backends and helpers), read from /proc. */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['--ppid', String(pid), '-o', 'pid='], { encoding: 'utf8' }).split('\n').map(Number).filter((n) => n > 0);
  } catch {
    return [];
  }
}

/** Sends `signal` to the server and, for an engine whose work runs in child processes, to each of them. */
function signalEngine(pid: number, signal: NodeJS.Signals, withChildren: boolean): void {
  const pids = withChildren ? [pid, ...childrenOf(pid)] : [pid];
  for (const p of pids) {
    try { process.kill(p, signal); } catch { /* already gone */ }
  }
}

async function killChild(child: ChildProcess | undefined, withChildren: boolean): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = once(child, 'exit');
  signalEngine(child.pid!, 'SIGCONT', withChildren);
  // The whole server at once, as a crashed machine would: a postmaster killed alone leaves its backends running.
  signalEngine(child.pid!, 'SIGKILL', withChildren);
  await gone;
}

async function stopChild(child: ChildProcess | undefined, graceMs: number): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = once(child, 'exit');
  signalEngine(child.pid!, 'SIGCONT', true);
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}

function engineHandle(
  name: PrivateEngine['name'], port: number, url: string, dir: string, launch: () => Promise<ChildProcess>,
): PrivateEngine {
  let child: ChildProcess | undefined;
  // Postgres works in child processes (one backend per connection); RabbitMQ and Redis in the server process.
  const withChildren = name === 'postgres';
  const handle: PrivateEngine = {
    name, port, url,
    pid: () => child!.pid!,
    kill: () => killChild(child, withChildren),
    freeze: () => signalEngine(child!.pid!, 'SIGSTOP', withChildren),
    thaw: () => signalEngine(child!.pid!, 'SIGCONT', withChildren),
    async start() { child = await launch(); },
    async destroy() {
      await stopChild(child, 10_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return handle;
}

/** Postgres 15 from the Debian packages, run as the `postgres` user (initdb refuses root) through setpriv (an exec, no fork). */
export async function startPrivatePostgres(): Promise<PrivateEngine> {
  const bindir = execFileSync('pg_config', ['--bindir']).toString().trim();
  const port = await sparePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-faults-pg-'));
  chmodSync(dir, 0o755);
  const data = path.join(dir, 'data');
  mkdirSync(data);
  const asPostgres = process.getuid?.() === 0;
  const ids = asPostgres ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) } : undefined;
  if (ids) { chownSync(dir, ids.uid, ids.gid); chownSync(data, ids.uid, ids.gid); }
  const as = (cmd: string, args: string[]): [string, string[]] =>
    asPostgres ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', cmd, ...args]] : [cmd, args];
  const [initCmd, initArgs] = as(path.join(bindir, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  execFileSync(initCmd, initArgs, { stdio: 'ignore' });
  const log: string[] = [];
  const launch = async () => {
    const [cmd, args] = as(path.join(bindir, 'postgres'), [
      // fsync off is safe against what these tests do (a process killed, never the machine): the kernel still holds
      // every write. synchronous_commit stays on: off, a SIGKILL would lose commits already answered.
      '-D', data, '-p', String(port), '-h', '127.0.0.1', '-k', dir, '-c', 'fsync=off', '-c', 'full_page_writes=off',
      '-c', 'max_connections=200',
    ]);
    const child = track(spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }), log);
    await waitFor(`private postgres on ${port}`, () => portOpen(port), 30_000, child);
    return child;
  };
  const handle = engineHandle('postgres', port, `postgres://postgres@127.0.0.1:${port}/postgres`, dir, launch);
  await handle.start();
  return handle;
}

/** RabbitMQ 3.10 with its own node name, ports, data and log dirs, no plugins (its management would want 15672). */
export async function startPrivateRabbit(): Promise<PrivateEngine> {
  const port = await sparePort();
  const distPort = await sparePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-faults-amqp-'));
  const nodeName = `troupe-faults-${port}@localhost`;
  const repoConf = readFileSync(path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../rabbitmq.conf'), 'utf8');
  // The project's broker settings, with this node's own listener and without the management listener.
  const conf = repoConf.split('\n').filter((l) => !/^\s*(listeners\.tcp|management\.)/.test(l)).join('\n') + `\nlisteners.tcp.default = 127.0.0.1:${port}\n`;
  writeFileSync(path.join(dir, 'rabbitmq.conf'), conf);
  writeFileSync(path.join(dir, 'enabled_plugins'), '[].\n');
  const env = {
    ...process.env,
    RABBITMQ_NODENAME: nodeName,
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, 'log'),
    RABBITMQ_CONFIG_FILE: path.join(dir, 'rabbitmq.conf'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_PID_FILE: path.join(dir, 'rabbit.pid'),
    RABBITMQ_LOGS: '-',
    // The script execs the VM in place of itself, so the spawned PID is the broker's own.
    RUNNING_UNDER_SYSTEMD: 'true',
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '+sbwt none +sbwtdcpu none +sbwtdio none',
  };
  const log: string[] = [];
  const launch = async () => {
    const child = track(spawn('/usr/lib/rabbitmq/bin/rabbitmq-server', [], { env, stdio: ['ignore', 'pipe', 'pipe'] }), log);
    await waitFor(`private rabbitmq on ${port}`, () => amqpAnswers(port), 180_000, child).catch((err: Error) => {
      throw new Error(`${err.message}\n${log.slice(-20).join('')}`);
    });
    return child;
  };
  const handle = engineHandle('rabbitmq', port, `amqp://guest:guest@127.0.0.1:${port}`, dir, launch);
  await handle.start();
  return handle;
}

/** The broker is up when it answers the AMQP protocol header (the port opens a little before it boots). */
async function amqpAnswers(port: number): Promise<boolean> {
  const amqp = await import('amqplib');
  try {
    const connection = await amqp.default.connect(`amqp://guest:guest@127.0.0.1:${port}`);
    await connection.close();
    return true;
  } catch {
    return false;
  }
}

/** Redis without persistence. */
export async function startPrivateRedis(): Promise<PrivateEngine> {
  const port = await sparePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-faults-redis-'));
  const log: string[] = [];
  const launch = async () => {
    const child = track(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] }), log);
    await waitFor(`private redis on ${port}`, () => portOpen(port), 10_000, child);
    return child;
  };
  const handle = engineHandle('redis', port, `redis://127.0.0.1:${port}`, dir, launch);
  await handle.start();
  return handle;
}
