import http from 'node:http';
import { randomUUID } from 'node:crypto';

/**
 * Steady mixed load for the fault tests, recording every write the service acknowledged (Jepsen-style: the
 * checker later looks for each one in the database). Operations: daemon heartbeats (which also deliver mutations),
 * dispatches whose sessions a worker walks claimed → running → finalizing → completed (retrying a refused report as
 * a daemon would), mutations enqueued and half of them cancelled at once, and SSE readers of the org's session events.
 * Requests go round-robin to the nodes given; each has a deadline, so a hung node shows up as a timeout, never as a
 * stuck test.
 */
export interface LoadTarget {
  readonly urls: readonly string[];
  readonly apiKey: string;
  readonly projectId: string;
  readonly workers: ReadonlyArray<{ workerId: string; runtimeJwt: string }>;
}

export interface LoadRates {
  readonly heartbeatsPerSecond: number;
  readonly dispatchesPerSecond: number;
  readonly mutationsPerSecond: number;
  readonly sseReaders: number;
}

export type Outcome = 'ok' | 'unavailable' | 'server_error' | 'client_error' | 'timeout' | 'network';

export interface Sample {
  readonly at: number;
  readonly op: string;
  readonly outcome: Outcome;
  readonly status: number;
  readonly ms: number;
  /** The error body's code, for a refusal. */
  readonly code?: string;
}

export interface Ledger {
  /** sessionId → when its dispatch was acknowledged (201). */
  readonly dispatched: Map<string, number>;
  /** `${sessionId} ${status}` for every transition acknowledged (200). */
  readonly transitions: Set<string>;
  /** Mutations acknowledged as enqueued (201). */
  readonly mutations: Set<string>;
  /** Mutations acknowledged as cancelled (200). */
  readonly cancelled: Set<string>;
  /** Mutation id → how many heartbeat replies delivered it. */
  readonly delivered: Map<string, number>;
}

const REQUEST_DEADLINE_MS = 10_000;
const MAX_IN_FLIGHT_PER_OP = 400;
// Enough sockets that the generator never queues requests itself: at 256, a node answering in ~1 s held every socket
// and requests waited here, timed as the node's latency.
const agent = new http.Agent({ keepAlive: true, maxSockets: 2_048 });

interface Reply { status: number; json: any; outcome: Outcome; ms: number }

function request(url: string, method: string, path: string, token: string, body?: unknown): Promise<Reply> {
  const started = performance.now();
  return new Promise((resolve) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(`${url}${path}`, {
      method, agent, timeout: REQUEST_DEADLINE_MS,
      headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        let json: any;
        try { json = JSON.parse(Buffer.concat(chunks).toString()); } catch { json = undefined; }
        const outcome: Outcome = status < 300 ? 'ok' : status === 503 ? 'unavailable' : status >= 500 ? 'server_error' : 'client_error';
        resolve({ status, json, outcome, ms: performance.now() - started });
      });
      res.on('error', () => resolve({ status: 0, json: undefined, outcome: 'network', ms: performance.now() - started }));
    });
    req.on('timeout', () => req.destroy(new Error('deadline')));
    req.on('error', (err) => resolve({ status: 0, json: undefined, outcome: err.message === 'deadline' ? 'timeout' : 'network', ms: performance.now() - started }));
    req.end(payload);
  });
}

// The path a worker reports (actors/kinds/session/machine.ts): running → completed is refused (409), so a walk without
// `finalizing` left every session running for ever and the terminal side effects unchecked.
const transitionsOf = ['claimed', 'running', 'finalizing', 'completed'] as const;

export class MixedLoad {
  readonly ledger: Ledger = { dispatched: new Map(), transitions: new Set(), mutations: new Set(), cancelled: new Set(), delivered: new Map() };
  readonly samples: Sample[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Requests under way per operation; past `MAX_IN_FLIGHT_PER_OP` a due request is skipped and counted in `shed`. */
  private readonly pending = new Map<string, number>();
  readonly shed = new Map<string, number>();
  private readonly sse: AbortController[] = [];
  private next = 0;
  private running = false;
  sseFrames = 0;
  sseReconnects = 0;

  constructor(private readonly target: LoadTarget, private readonly rates: LoadRates) {}

  start(): void {
    this.running = true;
    this.every(this.rates.heartbeatsPerSecond, () => this.heartbeat(), 'heartbeat');
    this.every(this.rates.dispatchesPerSecond, () => this.dispatch(), 'dispatch');
    this.every(this.rates.mutationsPerSecond, () => this.mutation(), 'mutation');
    for (let i = 0; i < this.rates.sseReaders; i++) void this.reader();
  }

  /** Stops issuing, then waits for every request (and every session's remaining reports) already under way. */
  async stop(): Promise<void> {
    this.running = false;
    for (const t of this.timers) clearInterval(t);
    for (const c of this.sse) c.abort();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Samples of one operation (all when omitted) in [from, to). */
  window(from: number, to: number, op?: string): Sample[] {
    return this.samples.filter((s) => s.at >= from && s.at < to && (op === undefined || s.op === op));
  }

  private url(): string {
    return this.target.urls[this.next++ % this.target.urls.length]!;
  }

  /** Issues `perSecond` calls a second in ticks of 10 ms (a rate, not a closed loop: a slow service gets no relief). */
  private every(perSecond: number, issue: () => Promise<unknown>, op = issue.name): void {
    if (perSecond <= 0) return;
    let owed = 0;
    let last = performance.now();
    this.timers.push(setInterval(() => {
      const now = performance.now();
      owed += ((now - last) / 1000) * perSecond;
      last = now;
      for (; owed >= 1; owed -= 1) {
        // A service slower than the offered rate would otherwise pile requests up here without bound.
        const under = this.pending.get(op) ?? 0;
        if (under >= MAX_IN_FLIGHT_PER_OP) {
          this.shed.set(op, (this.shed.get(op) ?? 0) + 1);
          continue;
        }
        this.pending.set(op, under + 1);
        this.track(issue().finally(() => this.pending.set(op, (this.pending.get(op) ?? 1) - 1)));
      }
    }, 10));
  }

  private track<T>(p: Promise<T>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private async call(op: string, method: string, path: string, token: string, body?: unknown): Promise<Reply> {
    const at = Date.now();
    const reply = await request(this.url(), method, path, token, body);
    const code = reply.outcome === 'ok' || typeof reply.json?.code !== 'string' ? undefined : reply.json.code as string;
    this.samples.push(code === undefined ? { at, op, outcome: reply.outcome, status: reply.status, ms: reply.ms } : { at, op, outcome: reply.outcome, status: reply.status, ms: reply.ms, code });
    return reply;
  }

  private async heartbeat(): Promise<void> {
    const w = this.target.workers[this.next % this.target.workers.length]!;
    const reply = await this.call('heartbeat', 'POST', '/api/daemon/heartbeat', w.runtimeJwt, { workerId: w.workerId });
    if (reply.outcome !== 'ok') return;
    if (typeof reply.json?.runtimeJwt === 'string') w.runtimeJwt = reply.json.runtimeJwt;
    for (const m of reply.json?.mutations ?? []) this.ledger.delivered.set(m.id, (this.ledger.delivered.get(m.id) ?? 0) + 1);
  }

  private async dispatch(): Promise<void> {
    const trackerSessionId = `faults-${randomUUID()}`;
    // A refused dispatch is retried with the same tracker id, as a tracker would: never two sessions for one.
    for (let attempt = 0; attempt < 3; attempt++) {
      const reply = await this.call('dispatch', 'POST', '/api/agent-dispatch', this.target.apiKey, {
        projectId: this.target.projectId, prompt: 'fault load', trackerSessionId,
      });
      if (reply.outcome === 'ok') {
        this.ledger.dispatched.set(reply.json.sessionId, Date.now());
        this.track(this.walk(reply.json.sessionId));
        return;
      }
      if (!this.running) return;
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  /** One worker takes the session to completed, retrying a refused report (a 409 means an earlier try landed). */
  private async walk(sessionId: string): Promise<void> {
    const w = this.target.workers[Math.floor(Math.random() * this.target.workers.length)]!;
    for (const status of transitionsOf) {
      for (let attempt = 0; ; attempt++) {
        const reply = await this.call('transition', 'POST', `/api/sessions/${sessionId}/status`, w.runtimeJwt, { status, workerId: w.workerId });
        if (reply.outcome === 'ok') {
          this.ledger.transitions.add(`${sessionId} ${status}`);
          break;
        }
        if (reply.status === 409 || attempt > 40) return;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  private async mutation(): Promise<void> {
    const w = this.target.workers[this.next % this.target.workers.length]!;
    const reply = await this.call('mutation', 'POST', '/api/daemon/mutations', this.target.apiKey, {
      workerHostId: w.workerId, op: 'pool.deleted', params: { poolId: `pool-${this.next}` },
    });
    if (reply.outcome !== 'ok') return;
    const id = reply.json.mutation.id as string;
    this.ledger.mutations.add(id);
    if (Math.random() < 0.5) {
      const cancel = await this.call('cancel', 'POST', `/api/daemon/mutations/${id}/cancel`, this.target.apiKey);
      if (cancel.outcome === 'ok') this.ledger.cancelled.add(id);
    }
  }

  private async reader(): Promise<void> {
    while (this.running) {
      const controller = new AbortController();
      this.sse.push(controller);
      await new Promise<void>((resolve) => {
        const req = http.get(`${this.url()}/api/sessions/events`, { headers: { authorization: `Bearer ${this.target.apiKey}`, accept: 'text/event-stream' }, signal: controller.signal }, (res) => {
          res.on('data', (chunk: Buffer) => { this.sseFrames += chunk.toString().split('\n\n').length - 1; });
          res.on('end', resolve);
          res.on('error', () => resolve());
        });
        req.on('error', () => resolve());
      });
      if (!this.running) return;
      this.sseReconnects += 1;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** Share of samples by outcome, and the p99 of their latencies. */
export function summarise(samples: readonly Sample[]): { count: number; p99Ms: number } & Record<Outcome, number> {
  const counts: Record<Outcome, number> = { ok: 0, unavailable: 0, server_error: 0, client_error: 0, timeout: 0, network: 0 };
  for (const s of samples) counts[s.outcome] += 1;
  const sorted = samples.map((s) => s.ms).sort((a, b) => a - b);
  const p99Ms = sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
  return { count: samples.length, p99Ms: Math.round(p99Ms * 10) / 10, ...counts };
}
