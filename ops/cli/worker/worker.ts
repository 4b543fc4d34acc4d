import { rmSync } from 'node:fs';
import os from 'node:os';
import {
  ApiError, Unreachable, type CredentialRotatedEvent, type DaemonOfferEvent, type DaemonStopEvent, type Mutation, type OfferedSession, type WorkerApi,
} from './api.js';
import { Agent, freshDir, type AgentExit } from './agent.js';
import { Backoff, sleep } from './backoff.js';
import { readEvents } from './sse.js';
import { StateDir, type Identity, type PendingReport } from './state.js';
import { isSessionId, isWorkerId } from './server-ids.js';
import { intervalSeconds, offerProblem, RefusalLog } from './server-data.js';
import type { WorkerLog } from './log.js';

/**
 * `troupe worker` (issue 15, decision 0023): registers with a registration token, heartbeats, takes sessions of its
 * projects as they are offered on the daemon event stream (or found by the poll, the fallback), runs the agent
 * command for each, relays its output, reports its outcome exactly once, and follows stops, mutations and
 * credential rotations. The server being gone is survived: agents keep running, reports wait in the state dir.
 */
export interface WorkerOptions {
  readonly url: string;
  readonly registrationToken: string;
  readonly agentCommand: string;
  readonly capacity: number;
  readonly name: string;
  readonly stateDir: string;
  readonly workDir: string;
  readonly drainTimeoutSeconds: number;
  /** The resource pool this worker's sessions run in; `pool.deleted` naming it stops them. */
  readonly pool?: string;
  /** SIGTERM → SIGKILL of an agent's process group. @default 10000 */
  readonly killGraceMs?: number;
  readonly backoffBaseMs?: number;
  readonly backoffCapMs?: number;
}

/** The registration token was refused: the worker cannot run until an operator gives it another. */
export class RegistrationRefused extends Error {}

interface RunningSession {
  readonly id: string;
  readonly projectId: string;
  readonly agent: Agent;
  readonly startedAt: number;
  /** Local time the claim was answered, to judge it against a held-sessions answer. */
  readonly claimedAt: number;
  readonly runningReported: Promise<void>;
  /** Whether the server acknowledged `running`; if not (it was gone), the outcome report starts with it. */
  runningAcked: boolean;
  costUsd: number;
  out: string[];
  outBytes: number;
  flushTimer: NodeJS.Timeout | undefined;
  flushing: Promise<void> | undefined;
  lastStepAt: number;
  /** Set when the worker ends the agent: what it tells, and whether the outcome is still reported (as failed). */
  stop: { reason: string; report: boolean } | undefined;
  killTimer: NodeJS.Timeout | undefined;
}

const OUTPUT_FLUSH_MS = 100;
const OUTPUT_MAX_CHUNKS = 20;
const OUTPUT_BUFFER_BYTES = 256 * 1024;
const MAX_CHUNK_CHARS = 16 * 1024;
const STREAM_IDLE_MS = 45_000;

/** The payload of a verified-by-the-server JWT we hold: only read for its expiry and projects. */
/** What `prepare` made for an offer's agent before its claim was answered. */
interface PreparedAgent {
  readonly agentDir?: string;
  readonly env?: Record<string, string>;
  readonly error?: Error;
}

function claimsOf(token: string): { exp?: number; prj?: string[] } {
  try {
    return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: number; prj?: string[] };
  } catch {
    return {};
  }
}

/** The reports that take a session from `status` to failed along the session table (spec 3.1). */
function failSteps(status: string): PendingReport['steps'] {
  if (status === 'claimed') return ['running', 'finalizing', 'failed'];
  if (status === 'finalizing') return ['failed'];
  return ['finalizing', 'failed'];
}

const normalUrl = (url: string): string => url.replace(/\/+$/, '');


export class Worker {
  private identity: Identity | undefined;
  private projects = new Set<string>();
  private readonly running = new Map<string, RunningSession>();
  private readonly claiming = new Set<string>();
  private readonly reporting = new Set<string>();
  /** Finished sessions whose last output could not be sent yet; their report waits for it. */
  private readonly unsentOutput = new Map<string, RunningSession>();
  private readonly state: StateDir;
  private draining = false;
  private stopping = false;
  private connected: boolean | undefined;
  private heartbeatWake = new AbortController();
  private eventsAbort: AbortController | undefined;
  private credentialsAbort: AbortController | undefined;
  private pollInFlight = false;
  private pollAgain = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly loops: Promise<void>[] = [];
  private readonly stopped = new AbortController();
  private firstReconcile = true;
  private readonly refusals: RefusalLog;

  constructor(private readonly opts: WorkerOptions, private readonly api: WorkerApi, private readonly log: WorkerLog) {
    this.state = new StateDir(opts.stateDir);
    this.refusals = new RefusalLog(log);
  }

  private get killGraceMs(): number { return this.opts.killGraceMs ?? 10_000; }
  private get token(): string { return this.identity!.runtimeJwt; }
  private get workerId(): string { return this.identity!.workerId; }
  private free(): number { return this.opts.capacity - this.running.size - this.claiming.size; }

  /** Runs until `drain()` finished; throws RegistrationRefused when the registration token is refused. */
  async run(): Promise<void> {
    await this.ensureIdentity();
    // Drained (SIGTERM) before it could register: nothing runs, nothing to wait for.
    if (!this.identity) return;
    this.loops.push(this.heartbeatLoop(), this.streamLoop('events'), this.streamLoop('credentials'));
    this.pollTimer = setInterval(() => this.pollSoon(), this.identity!.pollIntervalSeconds * 1000);
    this.pollSoon();
    void this.sendPendingReports();
    await new Promise<void>((resolve) => this.stopped.signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  // ---- identity ----------------------------------------------------------------------------------------------

  private async ensureIdentity(): Promise<void> {
    const saved = this.state.loadIdentity();
    const exp = saved ? claimsOf(saved.runtimeJwt).exp ?? 0 : 0;
    if (saved && isWorkerId(saved.workerId) && normalUrl(saved.url) === normalUrl(this.opts.url) && exp * 1000 > Date.now() + 30_000) {
      this.adopt(saved);
      this.log('info', 'worker.resumed', `resumed as worker ${saved.workerId}`, { workerId: saved.workerId, stateDir: this.opts.stateDir });
      return;
    }
    await this.register();
  }

  private async register(): Promise<void> {
    const backoff = this.newBackoff();
    for (;;) {
      try {
        const reg = await this.api.register({ registrationToken: this.opts.registrationToken, hostname: this.opts.name, maxAgents: this.opts.capacity });
        // Only what the worker reads is kept, checked: the id has its format, the token is a string, the intervals are sane.
        if (!isWorkerId(reg.workerId) || typeof reg.runtimeJwt !== 'string') throw new Error('the registration reply has no well-formed worker id and token');
        const identity: Identity = {
          url: normalUrl(this.opts.url), name: this.opts.name, workerId: reg.workerId, runtimeJwt: reg.runtimeJwt,
          heartbeatIntervalSeconds: intervalSeconds(reg.heartbeatIntervalSeconds, 15), pollIntervalSeconds: intervalSeconds(reg.pollIntervalSeconds, 5),
        };
        this.state.saveIdentity(identity);
        this.adopt(identity);
        this.log('info', 'worker.registered', `registered as worker ${reg.workerId}`, {
          workerId: reg.workerId, capacity: this.opts.capacity, projects: [...this.projects].length,
        });
        return;
      } catch (err) {
        if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
          throw new RegistrationRefused(`the server refused the registration token (${err.status}${err.code ? ` ${err.code}` : ''}): create a new one with POST /api/org/{orgId}/registration-tokens`);
        }
        if (this.stopping) return;
        const wait = backoff.next();
        this.log('warn', 'server.unreachable', `cannot register yet: ${(err as Error).message}; retrying in ${wait} ms`);
        await sleep(wait, this.stopped.signal);
        if (this.stopping) return;
      }
    }
  }

  private adopt(identity: Identity): void {
    const before = [...this.projects].sort().join(',');
    this.identity = identity;
    this.projects = new Set(claimsOf(identity.runtimeJwt).prj ?? []);
    if ([...this.projects].sort().join(',') !== before) this.eventsAbort?.abort();
  }

  /** The runtime token was refused: register once more; sessions of the old identity are left to the lease. */
  private async reregister(): Promise<void> {
    this.log('warn', 'worker.reregistering', 'the server refused the runtime token; registering again');
    this.state.forgetIdentity();
    for (const s of this.running.values()) this.stopAgent(s, 're-registered: the session belongs to the old worker identity', false);
    await this.register();
    this.eventsAbort?.abort();
    this.credentialsAbort?.abort();
  }

  // ---- heartbeat and mutations -------------------------------------------------------------------------------

  private async heartbeatLoop(): Promise<void> {
    const backoff = this.newBackoff();
    while (!this.stopping) {
      let wait: number;
      try {
        const reply = await this.api.heartbeat(this.token, {
          workerId: this.workerId, activeSessionIds: [...this.running.keys()], load: this.running.size / Math.max(1, this.opts.capacity),
        });
        backoff.reset();
        this.markConnected(true);
        if (typeof reply.runtimeJwt === 'string' && reply.runtimeJwt !== '') {
          this.adopt({ ...this.identity!, runtimeJwt: reply.runtimeJwt });
          this.state.saveIdentity(this.identity!);
        }
        for (const m of Array.isArray(reply.mutations) ? reply.mutations : []) if (typeof m === 'object' && m !== null) this.applyMutation(m);
        wait = this.identity!.heartbeatIntervalSeconds * 1000;
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) {
          try {
            await this.reregister();
          } catch (e) {
            this.fatal(e);
            return;
          }
          continue;
        }
        this.markConnected(false, err);
        wait = backoff.next();
        this.log('debug', 'heartbeat.failed', `heartbeat failed: ${(err as Error).message}; next try in ${wait} ms`);
      }
      this.heartbeatWake = new AbortController();
      await sleep(wait, AbortSignal.any([this.heartbeatWake.signal, this.stopped.signal]));
    }
  }

  private markConnected(up: boolean, err?: unknown): void {
    if (up && this.connected !== true) {
      if (this.connected === false) this.log('info', 'server.back', 'the server answers again');
      this.connected = true;
      void this.sendPendingReports();
      this.pollSoon();
    } else if (!up && this.connected !== false) {
      this.connected = false;
      this.log('warn', 'server.unreachable', `the server does not answer (${(err as Error)?.message ?? 'unknown'}); agents keep running, retrying with backoff`);
      // The heartbeat probes from now on, backing off, and its first success sends what waits.
      this.heartbeatWake.abort();
    }
  }

  private applyMutation(m: Mutation): void {
    const params = m.params ?? {};
    switch (m.op) {
      case 'project.add':
      case 'project.remove':
        this.log('info', 'mutation.applied', `${m.op} ${String(params.projectId)}: now taking work for ${this.projects.size} project(s)`, { mutationId: m.id, op: m.op, projectId: params.projectId });
        this.pollSoon();
        return;
      case 'modelAccess.set':
        this.state.setModelAccess({ allow: params.allow ?? [], deny: params.deny ?? [], ...(params.reason ? { reason: params.reason } : {}) });
        this.log('info', 'mutation.applied', 'modelAccess.set: new sessions receive the policy', { mutationId: m.id, op: m.op, allow: params.allow, deny: params.deny });
        return;
      case 'modelAccess.clear':
        this.state.clearModelAccess();
        this.log('info', 'mutation.applied', 'modelAccess.clear: new sessions receive no model-access policy', { mutationId: m.id, op: m.op, workloadId: params.workloadId });
        return;
      case 'pool.deleted': {
        const mine = this.opts.pool !== undefined && params.poolId === this.opts.pool;
        this.log('info', 'mutation.applied', mine
          ? `pool.deleted ${String(params.poolId)}: stopping its ${this.running.size} session(s)`
          : `pool.deleted ${String(params.poolId)}: not this worker's pool`, { mutationId: m.id, op: m.op, poolId: params.poolId });
        if (mine) for (const s of this.running.values()) this.stopAgent(s, `resource pool ${String(params.poolId)} was deleted`, true);
        return;
      }
      default:
        this.log('warn', 'mutation.unknown', `mutation ${m.op} is not known to this worker; ignored`, { mutationId: m.id, op: m.op });
    }
  }

  // ---- event streams ----------------------------------------------------------------------------------------

  private async streamLoop(which: 'events' | 'credentials'): Promise<void> {
    const backoff = this.newBackoff();
    const path = which === 'events' ? '/api/daemon/events' : '/api/daemon/credentials/stream';
    while (!this.stopping) {
      const abort = new AbortController();
      if (which === 'events') this.eventsAbort = abort; else this.credentialsAbort = abort;
      const requestedAt = Date.now();
      try {
        const signal = AbortSignal.any([abort.signal, this.stopped.signal]);
        // The rotate stream resumes after the last rotation kept, so none made while it was down is missed; `0`, with
        // none kept yet, asks for every credential's last rotation.
        const resumeFrom = which === 'credentials' ? (this.state.credentialStreamPosition() ?? '0') : undefined;
        const res = await this.api.stream(this.token, path, signal, resumeFrom);
        await readEvents(res.body!, (event, data, lastEventId) => {
          if (event === 'ready') backoff.reset();
          if (which === 'events') this.onDaemonEvent(event, data, requestedAt);
          else this.onCredentialEvent(event, data, lastEventId);
        }, STREAM_IDLE_MS, signal);
      } catch (err) {
        if (this.stopping) return;
        if (which === 'credentials' && err instanceof ApiError && err.status === 400 && err.code === 'VALIDATION_FAILED') {
          // A position the server does not read (a state dir edited by hand) is dropped: from the start instead.
          this.log('warn', 'credential.position_refused', `the server refused the rotate stream's position; resuming from every credential's last rotation: ${err.message}`);
          this.state.setCredentialStreamPosition(undefined);
        } else if (!abort.signal.aborted) {
          this.log('debug', 'stream.lost', `${path}: ${(err as Error).message}`);
        }
      }
      if (this.stopping) return;
      // A deliberate reconnect (new token) is immediate; a lost stream backs off.
      if (!abort.signal.aborted) await sleep(backoff.next(), this.stopped.signal);
    }
  }

  private onDaemonEvent(event: string, data: unknown, streamRequestedAt: number): void {
    const d = data as Record<string, unknown>;
    const id = d?.sessionId ?? (d?.session as { id?: unknown } | undefined)?.id;
    // Only a well-formed id is logged as a session's: a malformed one is shown, but searching the log by session never finds it.
    this.log('debug', 'stream.event', `daemon event ${event}`, isSessionId(id) ? { sessionId: id } : { offeredId: id });
    switch (event) {
      case 'ready':
        this.log('debug', 'stream.ready', 'daemon event stream connected');
        this.markConnected(true);
        void this.reconcile(streamRequestedAt);
        this.pollSoon();
        return;
      case 'offer':
        this.take((data as DaemonOfferEvent).session);
        return;
      case 'poll':
        this.pollSoon();
        return;
      case 'stop': {
        const stop = data as DaemonStopEvent;
        const s = this.running.get(stop.sessionId);
        if (s) this.stopAgent(s, stop.reason || stop.status, false);
        return;
      }
      case 'mutation':
        this.heartbeatWake.abort();
        return;
    }
  }

  private onCredentialEvent(event: string, data: unknown, lastEventId: string | undefined): void {
    if (event !== 'credential.rotated') return;
    const { kind, value } = (data ?? {}) as CredentialRotatedEvent;
    try {
      const file = this.state.writeCredential(kind, value);
      // Only once the value is on disk: a crash in between replays this rotation rather than skipping it.
      if (lastEventId !== undefined) this.state.setCredentialStreamPosition(lastEventId);
      let signalled = 0;
      for (const s of this.running.values()) if (s.agent.signal('SIGHUP')) signalled++;
      this.log('info', 'credential.rotated', `credential ${kind} rotated: written to ${file}, ${signalled} agent(s) sent SIGHUP`, { kind, agents: signalled });
    } catch (err) {
      this.log('error', 'credential.failed', `could not keep rotated credential ${kind}: ${(err as Error).message}`, { kind });
    }
  }

  /**
   * After (re)connecting: a session the worker runs that the server no longer gives to it was stopped or reclaimed
   * while the worker could not hear of it, so its agent ends and nothing is reported; a session the server gives it
   * that it does not run (a restart lost the agent) is reported failed. Only claims answered before the held list
   * was asked for are judged.
   */
  private async reconcile(before: number): Promise<void> {
    let held: Map<string, string>;
    try {
      held = new Map((await this.api.heldSessions(this.token)).sessions.map((s) => [s.id, s.status]));
    } catch (err) {
      this.log('debug', 'reconcile.failed', `could not list held sessions: ${(err as Error).message}`);
      return;
    }
    for (const s of this.running.values()) {
      if (s.claimedAt < before && !held.has(s.id) && !s.stop) this.stopAgent(s, 'the server no longer gives this session to the worker (stopped or reclaimed while away)', false);
    }
    // Orphans exist only right after a start: later, every held session is running, being claimed or reported.
    if (!this.firstReconcile) return;
    this.firstReconcile = false;
    const owed = new Set(this.state.pendingReports().map((r) => r.sessionId));
    for (const [id, status] of held) {
      if (this.running.has(id) || this.claiming.has(id) || owed.has(id) || this.reporting.has(id)) continue;
      // Its report would be a file named after the id: an id that is not one is the server's fault, and only logged.
      if (!isSessionId(id)) {
        this.refusals.note('session.ignored', 'the server lists a held session whose id is not a session id; ignored', id);
        continue;
      }
      this.log('warn', 'session.orphaned', 'held by this worker but no agent runs it (the worker restarted): reporting it failed', { sessionId: id });
      this.queueReport({ sessionId: id, workerId: this.workerId, steps: failSteps(status), costUsd: 0, error: 'the worker restarted and lost the agent', exitCode: null });
    }
  }

  // ---- taking work ------------------------------------------------------------------------------------------

  pollSoon(): void {
    if (this.stopping || !this.identity) return;
    if (this.pollInFlight) {
      this.pollAgain = true;
      return;
    }
    this.pollInFlight = true;
    void (async () => {
      try {
        do {
          this.pollAgain = false;
          const capacity = this.draining ? 0 : Math.max(0, Math.min(100, this.free()));
          if (capacity === 0 && this.running.size === 0) break;
          const reply = await this.api.poll(this.token, { workerId: this.workerId, capacity });
          for (const offer of reply.sessions) {
            if (offer.queuedPrompts) this.deliverPrompts(offer);
            else this.take(offer);
          }
        } while (this.pollAgain && !this.stopping);
      } catch (err) {
        this.log('debug', 'poll.failed', `poll failed: ${(err as Error).message}`);
        if (err instanceof Unreachable) this.markConnected(false, err);
      } finally {
        this.pollInFlight = false;
      }
    })();
  }

  private deliverPrompts(offer: OfferedSession): void {
    const s = this.running.get(offer.id);
    for (const p of offer.queuedPrompts ?? []) {
      const written = s?.agent.writeLine(p.text) ?? false;
      this.log(written ? 'info' : 'warn', 'session.prompt', written ? 'prompt written to the agent' : 'prompt could not be written (no agent reads it)', { sessionId: offer.id, promptId: p.id });
    }
  }

  private take(offer: OfferedSession | undefined): void {
    if (typeof offer !== 'object' || offer === null) return;
    // Before anything is made for it: its id names the agent's directory and its report's file.
    const problem = offerProblem(offer);
    if (problem !== undefined) {
      this.refusals.note('session.refused', `refusing an offer: ${problem}`, offer.id);
      return;
    }
    if (this.draining || this.stopping || this.free() <= 0) return;
    if (this.running.has(offer.id) || this.claiming.has(offer.id) || this.reporting.has(offer.id)) return;
    if (!this.projects.has(offer.projectId)) return;
    this.claiming.add(offer.id);
    // The agent's directory and environment are made while the claim is on the wire, so that once it is answered
    // only the spawn stands between the claim and the agent (issue 15: dispatch → agent started). Nothing runs
    // before the claim succeeds: a refused claim removes the directory it never used.
    const prepared = this.prepare(offer);
    void (async () => {
      try {
        await this.api.status(this.token, offer.id, { workerId: this.workerId, status: 'claimed' });
      } catch (err) {
        this.claiming.delete(offer.id);
        if (prepared.agentDir !== undefined) rmSync(prepared.agentDir, { recursive: true, force: true });
        // 409: another worker was first, or it is no longer pending. Nothing to do.
        if (!(err instanceof ApiError && (err.status === 409 || err.status === 404))) {
          this.log('warn', 'session.claim_failed', `could not claim: ${(err as Error).message}`, { sessionId: offer.id });
        }
        return;
      }
      this.claiming.delete(offer.id);
      this.log('info', 'session.claimed', `claimed (project ${offer.projectId})`, { sessionId: offer.id, projectId: offer.projectId });
      this.start(offer, prepared);
    })();
  }

  private agentEnv(offer: OfferedSession): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      // The worker's own secrets and settings are not the agent's.
      if (v === undefined || k === 'TROUPE_REGISTRATION_TOKEN' || k === 'TROUPE_ADMIN_TOKEN' || k === 'TROUPE_TOKEN' || k.startsWith('TROUPE_WORKER_')) continue;
      env[k] = v;
    }
    env.TROUPE_SESSION_ID = offer.id;
    env.TROUPE_PROJECT_ID = offer.projectId;
    env.TROUPE_SESSION_PROMPT = offer.prompt;
    if (offer.workType) env.TROUPE_WORK_TYPE = offer.workType;
    if (offer.provider) env.TROUPE_PROVIDER = offer.provider;
    if (offer.agentCardId) env.TROUPE_AGENT_CARD_ID = offer.agentCardId;
    env.TROUPE_CREDENTIALS_DIR = this.state.credentialsDir;
    const access = this.state.modelAccess();
    if (access !== undefined) env.TROUPE_MODEL_ACCESS = JSON.stringify(access);
    if (this.opts.pool) env.TROUPE_POOL_ID = this.opts.pool;
    return env;
  }

  /** A fresh directory and the environment for an offer's agent; what failed is kept to be reported once claimed. */
  private prepare(offer: OfferedSession): PreparedAgent {
    let agentDir: string | undefined;
    try {
      agentDir = freshDir(this.opts.workDir, offer.id);
      return { agentDir, env: this.agentEnv(offer) };
    } catch (err) {
      return { agentDir, error: err as Error };
    }
  }

  private start(offer: OfferedSession, prepared: PreparedAgent): void {
    const claimedAt = Date.now();
    let agent: Agent;
    let s: RunningSession | undefined;
    const agentDir = prepared.agentDir ?? '';
    try {
      if (prepared.error !== undefined || prepared.env === undefined) throw prepared.error ?? new Error('the agent was not prepared');
      agent = new Agent({
        sessionId: offer.id, command: this.opts.agentCommand, workDir: agentDir, prompt: offer.prompt,
        env: prepared.env,
      }, {
        onOutput: (line) => { if (s) this.onOutput(s, line); },
        onCost: (cost) => { if (s) s.costUsd = cost; },
        onStderr: (line) => this.log('debug', 'agent.stderr', line, { sessionId: offer.id }),
      });
    } catch (err) {
      this.log('error', 'session.start_failed', `could not start the agent: ${(err as Error).message}`, { sessionId: offer.id });
      this.queueReport({ sessionId: offer.id, workerId: this.workerId, steps: failSteps('claimed'), costUsd: 0, error: `the agent could not start: ${(err as Error).message}`, exitCode: null });
      return;
    }
    const runningReported = this.api.status(this.token, offer.id, { workerId: this.workerId, status: 'running' }).then(
      () => { if (s) s.runningAcked = true; },
      (err: unknown) => {
        if (err instanceof ApiError && err.status === 409 && s && !s.stop) this.stopAgent(s, 'the session was stopped before it started', false);
        else if (!(err instanceof ApiError)) this.log('warn', 'session.report_failed', `could not report running: ${(err as Error).message}`, { sessionId: offer.id });
      },
    );
    s = {
      id: offer.id, projectId: offer.projectId, agent, startedAt: Date.now(), claimedAt, runningReported, runningAcked: false, costUsd: 0,
      out: [], outBytes: 0, flushTimer: undefined, flushing: undefined, lastStepAt: 0, stop: undefined, killTimer: undefined,
    };
    this.running.set(offer.id, s);
    this.log('info', 'session.started', `agent started, pid ${agent.pid ?? '?'}, in ${agentDir}`, { sessionId: offer.id, pid: agent.pid, workDir: agentDir });
    const session = s;
    void agent.exited.then((exit) => this.finish(session, exit));
  }

  // ---- output ----------------------------------------------------------------------------------------------

  private onOutput(s: RunningSession, line: string): void {
    for (let i = 0; i < line.length; i += MAX_CHUNK_CHARS) {
      const chunk = line.slice(i, i + MAX_CHUNK_CHARS);
      s.out.push(chunk);
      s.outBytes += chunk.length;
    }
    // Only the last 64 KiB is kept by the server; a worker cut off from it keeps at most a little more.
    while (s.outBytes > OUTPUT_BUFFER_BYTES && s.out.length > 1) s.outBytes -= s.out.shift()!.length;
    const now = Date.now();
    if (now - s.lastStepAt >= 1000) {
      s.lastStepAt = now;
      this.api.stepHeartbeat(this.token, s.id, { workerId: this.workerId }).catch(() => undefined);
    }
    if (s.out.length >= OUTPUT_MAX_CHUNKS) void this.flushOutput(s);
    else s.flushTimer ??= setTimeout(() => { s.flushTimer = undefined; void this.flushOutput(s); }, OUTPUT_FLUSH_MS);
  }

  /** Sends what is buffered, one call at a time per session; a 409 means the session is no longer this worker's. */
  private async flushOutput(s: RunningSession): Promise<boolean> {
    while (s.flushing) await s.flushing;
    if (s.out.length === 0) return true;
    clearTimeout(s.flushTimer);
    s.flushTimer = undefined;
    const chunks = s.out.splice(0, 200);
    const bytes = chunks.reduce((n, c) => n + c.length, 0);
    s.outBytes -= bytes;
    let ok = true;
    s.flushing = (async () => {
      try {
        await this.api.output(this.token, s.id, { workerId: this.workerId, chunks });
      } catch (err) {
        ok = false;
        const live = this.running.get(s.id) === s;
        if (err instanceof ApiError && (err.status === 409 || err.status === 404)) {
          if (live && !s.stop) this.stopAgent(s, 'the server says this worker no longer holds the session', false);
          s.out = [];
          s.outBytes = 0;
        } else if (!s.stop || s.stop.report) {
          // Unreachable: keep the text for the next try (a finished session's report sends it first).
          s.out.unshift(...chunks);
          s.outBytes += bytes;
          if (live) s.flushTimer ??= setTimeout(() => { s.flushTimer = undefined; void this.flushOutput(s); }, 1000);
        }
      } finally {
        s.flushing = undefined;
      }
    })();
    await s.flushing;
    return ok && (s.out.length === 0 || this.flushOutput(s));
  }

  /** The output a finished session still owes, sent before its report; throws while the server does not answer. */
  private async sendUnsentOutput(sessionId: string): Promise<void> {
    const s = this.unsentOutput.get(sessionId);
    if (!s) return;
    if (!(await this.flushOutput(s)) && s.out.length > 0) throw new Unreachable('the last output is not sent yet');
    this.unsentOutput.delete(sessionId);
  }

  // ---- stopping and finishing -------------------------------------------------------------------------------

  /** Ends the agent's process group: SIGTERM now, SIGKILL after the grace. */
  private stopAgent(s: RunningSession, reason: string, report: boolean): void {
    if (s.stop) return;
    s.stop = { reason, report };
    this.log('info', 'session.stopping', `stopping the agent: ${reason}`, { sessionId: s.id });
    s.agent.signal('SIGTERM');
    s.killTimer = setTimeout(() => {
      if (s.agent.signal('SIGKILL')) this.log('warn', 'session.killed', `the agent outlived SIGTERM by ${this.killGraceMs} ms: SIGKILL`, { sessionId: s.id });
    }, this.killGraceMs);
  }

  private async finish(s: RunningSession, exit: AgentExit): Promise<void> {
    clearTimeout(s.killTimer);
    const seconds = ((Date.now() - s.startedAt) / 1000).toFixed(1);
    const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
    if (s.stop && !s.stop.report) {
      clearTimeout(s.flushTimer);
      this.running.delete(s.id);
      // Kill whatever the agent left in its group.
      s.agent.signal('SIGKILL');
      this.log('info', 'session.stopped', `stopped after ${seconds}s (${how}): ${s.stop.reason}`, { sessionId: s.id, exitCode: exit.code, signal: exit.signal, durationSeconds: Number(seconds) });
      this.afterSlotFreed();
      return;
    }
    await s.runningReported;
    // Output not yet sent (the server is gone) goes before the report, which waits for it (sendReport).
    if (!(await this.flushOutput(s).catch(() => false)) && s.out.length > 0) this.unsentOutput.set(s.id, s);
    s.agent.signal('SIGKILL');
    const ok = exit.code === 0 && !s.stop;
    const error = s.stop ? s.stop.reason : ok ? undefined : `the agent ended with ${how}`;
    const report: PendingReport = {
      sessionId: s.id, workerId: this.workerId, steps: [...(s.runningAcked ? [] : ['running' as const]), 'finalizing', ok ? 'completed' : 'failed'], costUsd: s.costUsd,
      ...(error ? { error } : {}), exitCode: exit.code,
    };
    this.queueReport(report);
    this.running.delete(s.id);
    this.log('info', 'session.finished', `finished with ${how} after ${seconds}s: ${ok ? 'completed' : 'failed'}${s.costUsd ? `, cost $${s.costUsd}` : ''}`, {
      sessionId: s.id, exitCode: exit.code, signal: exit.signal, durationSeconds: Number(seconds), outcome: ok ? 'completed' : 'failed', costUsd: s.costUsd,
    });
    this.afterSlotFreed();
  }

  private afterSlotFreed(): void {
    if (this.draining) {
      if (this.running.size === 0) this.drained?.();
      return;
    }
    this.pollSoon();
  }

  // ---- reports ----------------------------------------------------------------------------------------------

  /** Persists the report before the first try, so a crash or an outage cannot lose or double it. */
  private queueReport(report: PendingReport): void {
    this.state.saveReport(report);
    void this.sendReport(report);
  }

  private async sendPendingReports(): Promise<void> {
    for (const r of this.state.pendingReports()) await this.sendReport(r);
  }

  private async sendReport(report: PendingReport): Promise<void> {
    if (this.reporting.has(report.sessionId)) return;
    if (report.workerId !== this.identity?.workerId) {
      this.log('warn', 'session.report_dropped', 'a report of an earlier worker identity cannot be sent; the lease decides the session', { sessionId: report.sessionId });
      this.state.dropReport(report.sessionId);
      return;
    }
    this.reporting.add(report.sessionId);
    try {
      await this.sendUnsentOutput(report.sessionId);
      let steps = [...report.steps];
      while (steps.length > 0) {
        const status = steps[0]!;
        try {
          await this.api.status(this.token, report.sessionId, {
            workerId: report.workerId, status, ...(status === 'finalizing' ? {} : { costUsd: report.costUsd }), ...(report.error && status === 'failed' ? { error: report.error.slice(0, 4000) } : {}),
          });
        } catch (err) {
          if (!(err instanceof ApiError) || err.status >= 500 || err.status === 429) throw err;
          const from = (err.body as { details?: { from?: string } } | undefined)?.details?.from;
          // A retry of a report that reached the server before its answer was lost: already there.
          if (err.status === 409 && from !== undefined && report.steps.slice(report.steps.indexOf(status)).includes(from as never)) {
            steps = steps.slice(steps.indexOf(from as never) + 1);
            if (steps.length === 0) break;
            continue;
          }
          this.log('warn', 'session.report_dropped', `not reported (${err.message}): the session was stopped or reclaimed meanwhile`, { sessionId: report.sessionId, status });
          this.state.dropReport(report.sessionId);
          this.unsentOutput.delete(report.sessionId);
          return;
        }
        steps = steps.slice(1);
        if (steps.length > 0) this.state.saveReport({ ...report, steps });
      }
      this.state.dropReport(report.sessionId);
      this.log('info', 'session.reported', `reported ${report.steps[report.steps.length - 1]}`, { sessionId: report.sessionId });
    } catch (err) {
      this.log('warn', 'session.report_deferred', `report kept in the state dir until the server answers: ${(err as Error).message}`, { sessionId: report.sessionId });
      this.markConnected(false, err);
    } finally {
      this.reporting.delete(report.sessionId);
    }
  }

  // ---- drain and exit ---------------------------------------------------------------------------------------

  private drained: (() => void) | undefined;

  /**
   * SIGTERM: takes no new work, lets running sessions finish within the drain timeout, then stops the rest (reported
   * failed with the reason), waits for the reports (bounded), and ends `run()`.
   */
  async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    const timeout = this.opts.drainTimeoutSeconds;
    this.log('info', 'worker.draining', `draining: no new work; ${this.running.size} session(s) may finish within ${timeout}s`, { running: this.running.size });
    if (this.running.size > 0) {
      const allDone = new Promise<void>((resolve) => { this.drained = resolve; });
      const deadline = sleep(timeout * 1000, undefined, true);
      await Promise.race([allDone, deadline]);
      for (const s of this.running.values()) this.stopAgent(s, `the worker was drained: the drain timeout of ${timeout}s passed`, true);
      await allDone;
    }
    const reportsDeadline = Date.now() + 10_000;
    while ((this.reporting.size > 0 || this.claiming.size > 0) && Date.now() < reportsDeadline) await sleep(50);
    await this.shutdown();
    const left = this.state.pendingReports().length;
    this.log('info', 'worker.stopped', left ? `stopped; ${left} report(s) wait in the state dir for the next start` : 'stopped', { pendingReports: left });
    this.stopped.abort();
  }

  private async shutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.pollTimer);
    this.heartbeatWake.abort();
    this.eventsAbort?.abort();
    this.credentialsAbort?.abort();
    await Promise.race([Promise.allSettled(this.loops), sleep(5000, undefined, true)]);
  }

  private fatal(err: unknown): void {
    this.log('error', 'worker.fatal', (err as Error).message);
    this.fatalError = err;
    for (const s of this.running.values()) this.stopAgent(s, 'the worker could not continue', false);
    void this.shutdown().then(() => this.stopped.abort());
  }

  fatalError: unknown;

  private newBackoff(): Backoff {
    return new Backoff(this.opts.backoffBaseMs ?? 1000, this.opts.backoffCapMs ?? 30_000);
  }
}

export const defaultName = (): string => os.hostname();
export { Unreachable };
