import { ApiError, Unreachable, type OfferedSession, type WorkerApi } from './api.js';
import type { ServerConnection } from './connection.js';
import type { WorkerIdentity } from './identity.js';
import type { Lifetime } from './lifetime.js';
import type { WorkerLog } from './log.js';
import type { ReportQueue } from './report-queue.js';
import { offerProblem, type RefusalLog } from './server-data.js';
import { discardPrepared, prepareAgent, type AgentPlace, type PreparedAgent } from './session-agent.js';
import type { SessionTable } from './session-table.js';

/** At most this many sessions are asked for in one poll. */
const MAX_POLL_CAPACITY = 100;

export interface ClaimerDeps {
  readonly api: WorkerApi;
  readonly identity: WorkerIdentity;
  readonly table: SessionTable;
  readonly reports: ReportQueue;
  readonly connection: ServerConnection;
  readonly lifetime: Lifetime;
  readonly refusals: RefusalLog;
  readonly log: WorkerLog;
  readonly agentPlace: AgentPlace;
  /** The worker's `--agent` preset: an offer dispatched for another one is left to a worker that runs it. */
  readonly agentPreset: string;
  /** The claim was answered: the session's workspace is prepared and its agent starts; resolves once it started or failed to. */
  readonly start: (offer: OfferedSession, prepared: PreparedAgent) => Promise<void>;
}

/**
 * How the worker takes work: offers come from the daemon event stream, or from the poll (the fallback, and the
 * answer to a `poll` event); each well-formed offer of its projects that it has room for is claimed, and once the
 * claim is answered, started. A poll's offer that carries queued prompts is for a session it already runs.
 */
export class Claimer {
  private pollInFlight = false;
  private pollAgain = false;
  private pollTimer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: ClaimerDeps) {}

  startPolling(intervalSeconds: number): void {
    this.pollTimer = setInterval(() => this.pollSoon(), intervalSeconds * 1000);
    this.pollSoon();
  }

  stopPolling(): void {
    clearInterval(this.pollTimer);
  }

  /** Polls now, or right after the poll in flight: one poll at a time, and none missed. */
  pollSoon(): void {
    const { api, identity, table, lifetime, log } = this.deps;
    if (lifetime.stopping || !identity.current) return;
    if (this.pollInFlight) {
      this.pollAgain = true;
      return;
    }
    this.pollInFlight = true;
    void (async () => {
      try {
        do {
          this.pollAgain = false;
          const capacity = lifetime.draining ? 0 : Math.max(0, Math.min(MAX_POLL_CAPACITY, table.free()));
          if (capacity === 0 && table.running.size === 0) break;
          const reply = await api.poll(identity.token, { workerId: identity.workerId, capacity });
          for (const offer of reply.sessions) {
            if (offer.queuedPrompts) this.deliverPrompts(offer);
            else this.take(offer);
          }
        } while (this.pollAgain && !lifetime.stopping);
      } catch (err) {
        log('debug', 'poll.failed', `poll failed: ${(err as Error).message}`);
        if (err instanceof Unreachable) this.deps.connection.down(err);
      } finally {
        this.pollInFlight = false;
      }
    })();
  }

  take(offer: OfferedSession | undefined): void {
    if (typeof offer !== 'object' || offer === null) return;
    const { table, lifetime } = this.deps;
    // Before anything is made for it: its id names the agent's directory and its report's file.
    const problem = offerProblem(offer);
    if (problem !== undefined) {
      this.deps.refusals.note('session.refused', `refusing an offer: ${problem}`, offer.id);
      return;
    }
    if (offer.agent && offer.agent !== this.deps.agentPreset) {
      this.deps.refusals.note('session.other_agent', `leaving an offer for --agent ${offer.agent} to a worker that runs it (this one runs ${this.deps.agentPreset})`, offer.id);
      return;
    }
    if (lifetime.draining || lifetime.stopping || table.free() <= 0) return;
    if (table.running.has(offer.id) || table.claiming.has(offer.id) || this.deps.reports.isSending(offer.id)) return;
    if (!this.deps.identity.projects.has(offer.projectId)) return;
    table.claiming.add(offer.id);
    // The agent's directory and environment are made while the claim is on the wire, so that once it is answered
    // only the spawn stands between the claim and the agent (issue 15: dispatch → agent started). Nothing runs
    // before the claim succeeds: a refused claim removes the directory it never used.
    const prepared = prepareAgent(offer, this.deps.agentPlace);
    void this.claim(offer, prepared);
  }

  private async claim(offer: OfferedSession, prepared: PreparedAgent): Promise<void> {
    const { api, identity, table, log } = this.deps;
    try {
      await api.status(identity.token, offer.id, { workerId: identity.workerId, status: 'claimed' });
    } catch (err) {
      table.claiming.delete(offer.id);
      discardPrepared(offer, prepared);
      // 409: another worker was first, or it is no longer pending. Nothing to do.
      if (!(err instanceof ApiError && (err.status === 409 || err.status === 404))) {
        log('warn', 'session.claim_failed', `could not claim: ${(err as Error).message}`, { sessionId: offer.id });
      }
      return;
    }
    log('info', 'session.claimed', `claimed (project ${offer.projectId})`, { sessionId: offer.id, projectId: offer.projectId, run: offer.run ?? 1 });
    // The slot stays taken while the workspace is prepared: the session is in neither set only once it ended.
    try {
      await this.deps.start(offer, prepared);
    } finally {
      table.claiming.delete(offer.id);
    }
  }

  private deliverPrompts(offer: OfferedSession): void {
    const s = this.deps.table.running.get(offer.id);
    for (const p of offer.queuedPrompts ?? []) {
      const written = s?.agent.writeLine(p.text) ?? false;
      this.deps.log(written ? 'info' : 'warn', 'session.prompt', written ? 'prompt written to the agent'
        : 'prompt could not be written: no agent reads its stdin (an agent CLI takes a prompt sent once its run ended, as a follow-up)', { sessionId: offer.id, promptId: p.id });
    }
  }
}
