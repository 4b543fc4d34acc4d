import http from 'node:http';
import net from 'node:net';
import { randomBytes } from 'node:crypto';

/**
 * The load on the resident bench's real-engine node (resident.ts): registered workers heartbeating each on its own
 * phase of the cycle, sessions dispatched, and workers holding their daemon event streams open.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One keep-alive pool for every call of the load; destroyed when the bench ends. */
export const loadAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** POSTs JSON through the load's agent; a reply of 300 or more is thrown with its status and start. */
export function post(port: number, pathname: string, token: string | undefined, body: unknown): Promise<any> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, path: pathname, method: 'POST', agent: loadAgent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => {
        if ((res.statusCode ?? 0) >= 300) return reject(new Error(`POST ${pathname} answered ${res.statusCode}: ${text.slice(0, 200)}`));
        resolve(text ? JSON.parse(text) : undefined);
      });
    });
    req.setTimeout(60_000, () => req.destroy(new Error(`POST ${pathname} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Set-up calls retry what a busy node refuses for now (503: an ask that missed its deadline), as a worker would. */
export async function patiently<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= 6 || !/answered 503|timed out|ECONNRESET/.test((err as Error).message)) throw err;
      await sleep(250 * 2 ** attempt);
    }
  }
}

export async function pooled(count: number, width: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, count) }, async () => {
    while (next < count) await work(next++);
  }));
}

/** A raw-socket SSE client that only needs to see the stream open (`event: ready`), then keeps it open. */
function openStream(port: number, token: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let head = '';
    const timer = setTimeout(() => { socket.destroy(); reject(new Error('stream did not open in 60 s')); }, 60_000);
    socket.on('connect', () => socket.write(`GET /api/daemon/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\n\r\n`));
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (head.includes('event: ready')) {
        clearTimeout(timer);
        socket.off('data', onData);
        socket.on('data', () => {});
        resolve(socket);
      } else if (head.includes('\r\n\r\n') && !head.startsWith('HTTP/1.1 200')) {
        clearTimeout(timer);
        socket.destroy();
        reject(new Error(`stream refused: ${head.slice(0, 120)}`));
      }
    };
    socket.on('data', onData);
    socket.on('error', () => {});
  });
}

/** Session actors alive on the node, from its /metrics. */
export async function aliveSessions(port: number): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics', agent: loadAgent }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
  const line = text.split('\n').find((l) => l.startsWith('troupe_actors_alive{') && l.includes('kind="session"'));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

export interface BenchWorker { readonly workerId: string; runtimeJwt: string }

/** Registers `count` workers with the org's registration token, 32 at a time. */
export async function registerWorkers(port: number, registrationToken: string, count: number): Promise<BenchWorker[]> {
  const workers: BenchWorker[] = new Array(count);
  const began = performance.now();
  await pooled(count, 32, async (i) => {
    const d = await patiently(() => post(port, '/v1/daemon/register', undefined, { registrationToken, hostname: `bench-${i}`, maxAgents: 4 }));
    workers[i] = { workerId: d.workerId, runtimeJwt: d.runtimeJwt };
  });
  process.stderr.write(`registered ${count} workers in ${((performance.now() - began) / 1000).toFixed(0)} s\n`);
  return workers;
}

export interface Heartbeats {
  /** Heartbeats sent so far, and those that failed. */
  readonly counts: { sent: number; failed: number };
  /** Until `stop`: the workers' streams are reopened only while they heartbeat. */
  readonly running: boolean;
  /** Sends no more heartbeats; resolves once those in flight are answered. */
  stop(): Promise<void>;
}

/**
 * Every worker heartbeats once per `cycleSeconds`, at its own phase of the cycle, as independent timers do; from the
 * call on, so that a long set-up keeps their runtime tokens fresh (a heartbeat hands out a new one when little is left).
 */
export function heartbeatContinuously(port: number, workers: BenchWorker[], cycleSeconds: number): Heartbeats {
  const counts = { sent: 0, failed: 0 };
  let running = true;
  const loop = (async () => {
    const cycleStart = performance.now();
    const perMs = workers.length / (cycleSeconds * 1000);
    const inFlight = new Set<Promise<void>>();
    while (running) {
      const due = Math.floor((performance.now() - cycleStart) * perMs);
      while (counts.sent < due) {
        const w = workers[counts.sent % workers.length]!;
        counts.sent += 1;
        const p = post(port, '/api/daemon/heartbeat', w.runtimeJwt, { workerId: w.workerId }).then(
          (reply: { runtimeJwt?: string }) => { if (reply.runtimeJwt) w.runtimeJwt = reply.runtimeJwt; },
          () => { counts.failed += 1; },
        );
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
      await sleep(5);
    }
    await Promise.all(inFlight);
  })();
  return {
    counts,
    get running() { return running; },
    stop() { running = false; return loop; },
  };
}

/** Dispatches `count` sessions to the org's project with its API key, 64 at a time. */
export async function dispatchSessions(port: number, org: { apiKey: { fullKey: string }; project: { id: string } }, count: number, tag: string): Promise<void> {
  const began = performance.now();
  await pooled(count, 64, async () => {
    // A retried dispatch names its tracker session, so a first attempt that did land is answered, not doubled.
    const trackerSessionId = `bench-${tag}-${randomBytes(8).toString('hex')}`;
    await patiently(() => post(port, '/api/agent-dispatch', org.apiKey.fullKey, { projectId: org.project.id, prompt: 'Fix the flaky test in the billing module', trackerSessionId }));
  });
  process.stderr.write(`dispatched ${count} sessions in ${((performance.now() - began) / 1000).toFixed(0)} s\n`);
}

/**
 * Each of `workers` holds its event stream (added to `into`), and opens it again with its current token should the
 * node close it while `keepOpen()` (a stream ends with the token it was opened with), as the worker does. Answers
 * how many were reopened so far.
 */
export async function holdStreams(port: number, workers: readonly BenchWorker[], into: net.Socket[], keepOpen: () => boolean): Promise<() => number> {
  let reopened = 0;
  const hold = async (w: BenchWorker): Promise<void> => {
    const socket = await patiently(() => openStream(port, w.runtimeJwt));
    into.push(socket);
    socket.once('close', () => {
      if (!keepOpen()) return;
      reopened += 1;
      void hold(w).catch(() => undefined);
    });
  };
  const began = performance.now();
  for (let i = 0; i < workers.length; i += 200) await Promise.all(workers.slice(i, i + 200).map(hold));
  process.stderr.write(`opened ${workers.length} event streams in ${((performance.now() - began) / 1000).toFixed(0)} s\n`);
  return () => reopened;
}
