import { ApiError, type WorkerApi } from './api.js';
import type { Caller } from './identity.js';

const STEP_FLUSH_MS = 200;
const STEPS_PER_CALL = 100;
/** A worker cut off from the server keeps this many steps at most; the oldest go first. */
const MAX_KEPT_STEPS = 500;
const RETRY_MS = 2000;

export interface ToolStep {
  readonly tool: string;
  readonly summary: string;
  readonly at: string;
  readonly id: string;
}

/**
 * An agent's tool steps on their way to the session's timeline (`POST /api/sessions/{id}/steps`, decision 0076):
 * batched for 200 ms, one call at a time. Each step carries an id (the run's claim time and its rank), so a call
 * retried after a lost answer records nothing twice. The timeline is a view of the run, not its outcome: steps
 * that never reach the server are dropped once the session ends, and its report does not wait for them.
 */
export class StepRelay {
  private pending: ToolStep[] = [];
  private rank = 0;
  private timer: NodeJS.Timeout | undefined;
  private sending = false;
  private ended = false;

  constructor(
    private readonly sessionId: string,
    private readonly runMark: string,
    private readonly api: WorkerApi,
    private readonly caller: Caller,
  ) {}

  add(tool: string, summary: string): void {
    if (this.ended) return;
    this.pending.push({ tool: tool.slice(0, 100) || 'tool', summary: summary.slice(0, 200), at: new Date().toISOString(), id: `${this.runMark}-${++this.rank}` });
    if (this.pending.length > MAX_KEPT_STEPS) this.pending.splice(0, this.pending.length - MAX_KEPT_STEPS);
    this.schedule(STEP_FLUSH_MS);
  }

  /** Sends what is pending now; the session has ended, so nothing is retried after this call. */
  async end(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.send();
    this.ended = true;
    this.pending = [];
  }

  private schedule(ms: number): void {
    if (this.ended || this.timer !== undefined) return;
    this.timer = setTimeout(() => { this.timer = undefined; void this.send(); }, ms);
  }

  private async send(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.pending.length > 0 && !this.ended) {
        const batch = this.pending.slice(0, STEPS_PER_CALL);
        try {
          await this.api.steps(this.caller.token, this.sessionId, { workerId: this.caller.workerId, steps: batch });
        } catch (err) {
          // 400/404/409: the server will not take these (the session is no longer ours); an outage, or a 429 (the
          // node's per-worker limit, decision 0082), is retried later.
          if (err instanceof ApiError && err.status !== 429) this.pending.splice(0, batch.length);
          else this.schedule(RETRY_MS);
          return;
        }
        this.pending.splice(0, batch.length);
      }
    } finally {
      this.sending = false;
    }
  }
}
