import { ApiError, Unreachable, type WorkerApi } from './api.js';
import type { Caller } from './identity.js';

const OUTPUT_FLUSH_MS = 100;
const OUTPUT_MAX_CHUNKS = 20;
const OUTPUT_BUFFER_BYTES = 256 * 1024;
const MAX_CHUNK_CHARS = 16 * 1024;
const CHUNKS_PER_CALL = 200;
const RETRY_MS = 1000;
const STEP_HEARTBEAT_MS = 1000;

/** What the relay asks of the session it relays for. */
export interface OutputOwner {
  /** Whether the worker still runs the session: once it finished, what is left is sent only with its report. */
  isRunning(): boolean;
  /** Whether text that could not be sent is kept for the next try: not once the session ends unreported. */
  keepsUnsent(): boolean;
  /** The server answered that this worker no longer holds the session. */
  notHeld(): void;
}

/**
 * A session's agent output on its way to the server: batched (after 100 ms or 20 chunks), one call at a time, kept
 * through an outage up to a bound. Output also tells the server the agent is alive (a step heartbeat, at most once a
 * second).
 */
export class OutputRelay {
  private chunks: string[] = [];
  private bytes = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private lastStepAt = 0;

  constructor(
    private readonly sessionId: string,
    private readonly api: WorkerApi,
    private readonly caller: Caller,
    private readonly owner: OutputOwner,
  ) {}

  get hasUnsent(): boolean {
    return this.chunks.length > 0;
  }

  add(line: string): void {
    for (let i = 0; i < line.length; i += MAX_CHUNK_CHARS) {
      const chunk = line.slice(i, i + MAX_CHUNK_CHARS);
      this.chunks.push(chunk);
      this.bytes += chunk.length;
    }
    // Only the last 64 KiB is kept by the server; a worker cut off from it keeps at most a little more.
    while (this.bytes > OUTPUT_BUFFER_BYTES && this.chunks.length > 1) this.bytes -= this.chunks.shift()!.length;
    const now = Date.now();
    if (now - this.lastStepAt >= STEP_HEARTBEAT_MS) {
      this.lastStepAt = now;
      this.api.stepHeartbeat(this.caller.token, this.sessionId, { workerId: this.caller.workerId }).catch(() => undefined);
    }
    if (this.chunks.length >= OUTPUT_MAX_CHUNKS) void this.flush();
    else this.flushTimer ??= setTimeout(() => { this.flushTimer = undefined; void this.flush(); }, OUTPUT_FLUSH_MS);
  }

  /** Sends what is buffered, one call at a time; true when all of it reached the server. */
  async flush(): Promise<boolean> {
    while (this.flushing) await this.flushing;
    if (this.chunks.length === 0) return true;
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const chunks = this.chunks.splice(0, CHUNKS_PER_CALL);
    const bytes = chunks.reduce((n, c) => n + c.length, 0);
    this.bytes -= bytes;
    let ok = true;
    this.flushing = (async () => {
      try {
        await this.api.output(this.caller.token, this.sessionId, { workerId: this.caller.workerId, chunks });
      } catch (err) {
        ok = false;
        this.keepOrDrop(err, chunks, bytes);
      } finally {
        this.flushing = undefined;
      }
    })();
    await this.flushing;
    return ok && (this.chunks.length === 0 || this.flush());
  }

  /** The output a finished session still owes, sent before its report; throws while the server does not answer. */
  async sendRest(): Promise<void> {
    if (!(await this.flush()) && this.chunks.length > 0) throw new Unreachable('the last output is not sent yet');
  }

  /**
   * The session ended unreported: nothing more is sent on a timer. The spent handle stays, so that a line its
   * leftover processes still write schedules no other.
   */
  stopTimer(): void {
    clearTimeout(this.flushTimer);
  }

  /** A 409 or 404 means the session is no longer this worker's; anything else is an outage, retried. */
  private keepOrDrop(err: unknown, chunks: string[], bytes: number): void {
    const running = this.owner.isRunning();
    if (err instanceof ApiError && (err.status === 409 || err.status === 404)) {
      if (running) this.owner.notHeld();
      this.chunks = [];
      this.bytes = 0;
    } else if (this.owner.keepsUnsent()) {
      // Unreachable: keep the text for the next try (a finished session's report sends it first).
      this.chunks.unshift(...chunks);
      this.bytes += bytes;
      if (running) this.flushTimer ??= setTimeout(() => { this.flushTimer = undefined; void this.flush(); }, RETRY_MS);
    }
  }
}
