import os from 'node:os';
import { Unreachable, type WorkerApi } from './api.js';
import { Backoff, sleep } from './backoff.js';
import { Claimer } from './claiming.js';
import { ServerConnection } from './connection.js';
import { credentialRotation } from './credential-rotation.js';
import { daemonEvents } from './daemon-events.js';
import { Drain } from './drain.js';
import { EventStream } from './event-stream.js';
import { Heartbeat } from './heartbeat.js';
import { WorkerIdentity } from './identity.js';
import { Lifetime } from './lifetime.js';
import type { WorkerLog } from './log.js';
import { applyMutation } from './mutations.js';
import type { WorkerOptions } from './options.js';
import { Reconciler } from './reconcile.js';
import { ReportQueue } from './report-queue.js';
import { RefusalLog } from './server-data.js';
import { SessionLifecycle } from './session-lifecycle.js';
import { ownMcpCommand } from './agent-line.js';
import { SessionTable } from './session-table.js';
import { startWorkspaceSweeps, workspacesSettled, type WorkspacePlace } from './session-workspace.js';
import { StateDir } from './state.js';

export type { WorkerOptions } from './options.js';
export { RegistrationRefused } from './identity.js';

/** How long a stop waits for the heartbeat, the streams and the poll to end. */
const LOOPS_STOP_MS = 5000;

/**
 * `troupe worker` (issue 15, decision 0023; its parts: decision 0072): registers, then runs the heartbeat, the daemon
 * event stream, the rotate stream and the poll side by side until drained. This class only builds the parts and
 * wires what one tells another; each part is a file of its own.
 */
export class Worker {
  /** Why the worker stopped on its own rather than by a drain (a `RegistrationRefused` on re-registering, …). */
  fatalError: unknown;
  private readonly lifetime = new Lifetime();
  private readonly table: SessionTable;
  private readonly identity: WorkerIdentity;
  private readonly reports: ReportQueue;
  private readonly claimer: Claimer;
  private readonly heartbeat: Heartbeat;
  private readonly daemonStream: EventStream;
  private readonly credentialStream: EventStream;
  private readonly drainer: Drain;
  private readonly loops: Promise<void>[] = [];
  private readonly workspaces: WorkspacePlace;

  constructor(opts: WorkerOptions, api: WorkerApi, private readonly log: WorkerLog) {
    const { lifetime } = this;
    const newBackoff = () => new Backoff(opts.backoffBaseMs ?? 1000, opts.backoffCapMs ?? 30_000);
    const refusals = new RefusalLog(log);
    const state = new StateDir(opts.stateDir);
    const table = this.table = new SessionTable(opts.capacity);
    const identity = this.identity = new WorkerIdentity({
      opts, api, state, log, lifetime, newBackoff, projectsChanged: () => this.daemonStream.dropConnection(),
    });
    const connection = new ServerConnection(log, {
      back: () => { void this.reports.sendPending(); this.claimer.pollSoon(); },
      lost: () => this.heartbeat.wake(),
    });
    const reports = this.reports = new ReportQueue({ api, identity, state, log, connection });
    const workspaces = this.workspaces = { stateDir: opts.stateDir, workDir: opts.workDir, keepHours: opts.keepWorkspacesHours ?? 24 };
    const lifecycle = new SessionLifecycle({
      api, identity, table, reports, log, agent: opts.agent, workspaces, killGraceMs: opts.killGraceMs ?? 10_000, slotFreed: () => this.slotFreed(),
      line: { url: opts.url, mcpCommand: opts.mcpCommand ?? ownMcpCommand() },
    });
    const claimer = this.claimer = new Claimer({
      api, identity, table, reports, connection, lifetime, refusals, log,
      agentPlace: { workDir: opts.workDir, state, pool: opts.pool }, agentPreset: opts.agent.preset.name,
      start: (offer, prepared) => lifecycle.start(offer, prepared),
    });
    this.heartbeat = new Heartbeat({
      api, identity, table, connection, lifetime, log, newBackoff,
      applyMutation: (m) => applyMutation(m, {
        log, state, table, pool: opts.pool, projectCount: () => identity.projects.size, pollSoon: () => claimer.pollSoon(), drain: () => void this.drain(),
      }),
      tokenRefused: () => this.reregister(),
      fatal: (err) => this.fatal(err),
    });
    const reconciler = new Reconciler({ api, identity, table, reports, state, refusals, log });
    const streamDeps = { api, identity, lifetime, log, newBackoff };
    this.daemonStream = new EventStream(daemonEvents({
      log, table, connected: () => connection.up(), reconcile: (before) => void reconciler.reconcile(before),
      pollSoon: () => claimer.pollSoon(), take: (offer) => claimer.take(offer), wakeHeartbeat: () => this.heartbeat.wake(),
    }), streamDeps);
    this.credentialStream = new EventStream(credentialRotation(state, table, log), streamDeps);
    this.drainer = new Drain({
      lifetime, table, reports, state, log, drainTimeoutSeconds: opts.drainTimeoutSeconds, stopLoops: () => this.stopLoops(),
    });
  }

  /** Runs until `drain()` finished; throws RegistrationRefused when the registration token is refused. */
  async run(): Promise<void> {
    await this.identity.resumeOrRegister();
    // Drained (SIGTERM) before it could register: nothing runs, nothing to wait for.
    const identity = this.identity.current;
    if (!identity) return;
    this.loops.push(this.heartbeat.run(), this.daemonStream.run(), this.credentialStream.run());
    this.claimer.startPolling(identity.pollIntervalSeconds);
    void this.reports.sendPending();
    const stopSweeps = startWorkspaceSweeps(this.workspaces, this.log);
    await this.lifetime.whenEnded();
    stopSweeps();
    // A spare worktree being made in the background is finished before the process ends.
    await workspacesSettled();
  }

  /**
   * SIGTERM: takes no new work, lets running sessions finish within the drain timeout, then stops the rest (reported
   * failed with the reason), waits for the reports (bounded), and ends `run()`.
   */
  drain(): Promise<void> {
    return this.drainer.drain();
  }

  pollSoon(): void {
    this.claimer.pollSoon();
  }

  /** A freed slot takes new work, unless the worker drains: then it may be the last session the drain waits for. */
  private slotFreed(): void {
    if (this.lifetime.draining) this.drainer.sessionEnded();
    else this.claimer.pollSoon();
  }

  /** The runtime token was refused: register once more; sessions of the old identity are left to the lease. */
  private async reregister(): Promise<void> {
    this.log('warn', 'worker.reregistering', 'the server refused the runtime token; registering again');
    this.identity.forget();
    this.table.stopAll('re-registered: the session belongs to the old worker identity', false);
    await this.identity.register();
    this.daemonStream.dropConnection();
    this.credentialStream.dropConnection();
  }

  private fatal(err: unknown): void {
    this.log('error', 'worker.fatal', (err as Error).message);
    this.fatalError = err;
    this.table.stopAll('the worker could not continue', false);
    void this.drainer.shutdown().then(() => this.lifetime.end());
  }

  private async stopLoops(): Promise<void> {
    this.claimer.stopPolling();
    this.heartbeat.wake();
    this.daemonStream.dropConnection();
    this.credentialStream.dropConnection();
    await Promise.race([Promise.allSettled(this.loops), sleep(LOOPS_STOP_MS, undefined, true)]);
  }
}

export const defaultName = (): string => os.hostname();
export { Unreachable };
