import { randomBytes } from 'node:crypto';
import { ApiError, Unreachable, type WorkerApi } from './api.js';
import type { Caller } from './identity.js';

const OUTPUT_FLUSH_MS = 100;
const OUTPUT_MAX_CHUNKS = 20;
/** Unsent output past which the agent's stdout is no longer read (it blocks on a full pipe), and where reading resumes. */
const BACKLOG_HIGH_BYTES = 1024 * 1024;
const BACKLOG_LOW_BYTES = 256 * 1024;
/** Only an agent whose lines each become many chunks can pass the high mark by this much; then the oldest go. */
const OUTPUT_BUFFER_BYTES = 16 * 1024 * 1024;
const MAX_CHUNK_CHARS = 16 * 1024;
/** A call carries at most this many chunks and characters (the route takes 1,000 chunks and a 1 MiB body). */
const CHUNKS_PER_CALL = 1000;
const CHARS_PER_CALL = 512 * 1024;
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
 * A session's agent output on its way to the server: batched (after 100 ms or 20 chunks, more per call while a
 * backlog waits), one call at a time, each line once (decision 0090). Every call names this relay and how many chunks
 * it sent before, so the server keeps only the new part of a batch retried after a lost answer. Nothing is dropped
 * while the server is slow or away: past 1 MiB unsent the owner stops reading the agent's stdout (`onBacklog`), so the
 * agent waits on its pipe, and reading resumes below 256 KiB. Output also tells the server the agent is alive (a step
 * heartbeat, at most once a second).
 */
export class OutputRelay {
  private chunks: string[] = [];
  private bytes = 0;
  /** The relay's number of `chunks[0]`: chunks sent (or given up) before it. */
  private nextChunk = 0;
  private readonly relayId = `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
  private backlogged = false;
  /** Whether the server takes `relay`: a node older than the worker refuses the member (400), and then gets none. */
  private relayTaken = true;
  private backlogListener: ((full: boolean) => void) | undefined;
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

  /** Told `true` when the unsent output passes the high mark (stop reading the agent), `false` when it is low again. */
  onBacklog(listener: (full: boolean) => void): void {
    this.backlogListener = listener;
  }

  add(line: string): void {
    for (let i = 0; i < line.length; i += MAX_CHUNK_CHARS) {
      const chunk = line.slice(i, i + MAX_CHUNK_CHARS);
      this.chunks.push(chunk);
      this.bytes += chunk.length;
    }
    while (this.bytes > OUTPUT_BUFFER_BYTES && this.chunks.length > 1) this.dropOldest();
    if (!this.backlogged && this.bytes > BACKLOG_HIGH_BYTES) this.setBacklogged(true);
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
    const { chunks, bytes } = this.takeBatch();
    const relay = { id: this.relayId, firstChunk: this.nextChunk };
    this.nextChunk += chunks.length;
    let ok = true;
    this.flushing = (async () => {
      try {
        await this.api.output(this.caller.token, this.sessionId, { workerId: this.caller.workerId, chunks, ...(this.relayTaken ? { relay } : {}) });
      } catch (err) {
        ok = false;
        this.keepOrDrop(err, chunks, bytes);
      } finally {
        this.flushing = undefined;
      }
    })();
    await this.flushing;
    if (this.backlogged && this.bytes < BACKLOG_LOW_BYTES) this.setBacklogged(false);
    return ok && (this.chunks.length === 0 || this.flush());
  }

  private takeBatch(): { chunks: string[]; bytes: number } {
    let n = 0;
    let bytes = 0;
    while (n < this.chunks.length && n < CHUNKS_PER_CALL && (n === 0 || bytes + this.chunks[n]!.length <= CHARS_PER_CALL)) bytes += this.chunks[n++]!.length;
    this.bytes -= bytes;
    return { chunks: this.chunks.splice(0, n), bytes };
  }

  private dropOldest(): void {
    this.bytes -= this.chunks.shift()!.length;
    this.nextChunk++;
  }

  private setBacklogged(full: boolean): void {
    this.backlogged = full;
    this.backlogListener?.(full);
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
    if (err instanceof ApiError && err.status === 400) {
      // A refusal of the request itself is not retried as it was: without `relay` once (an older node), then dropped,
      // so that an agent held back by the backlog is never held for ever by a batch no server takes.
      if (this.relayTaken) {
        this.relayTaken = false;
        this.chunks.unshift(...chunks);
        this.nextChunk -= chunks.length;
        this.bytes += bytes;
        if (running) this.flushTimer ??= setTimeout(() => { this.flushTimer = undefined; void this.flush(); }, 0);
      }
      return;
    }
    if (err instanceof ApiError && (err.status === 409 || err.status === 404)) {
      if (running) this.owner.notHeld();
      this.nextChunk += this.chunks.length;
      this.chunks = [];
      this.bytes = 0;
    } else if (this.owner.keepsUnsent()) {
      // Unreachable: keep the text for the next try (a finished session's report sends it first), under the same numbers.
      this.chunks.unshift(...chunks);
      this.nextChunk -= chunks.length;
      this.bytes += bytes;
      if (running) this.flushTimer ??= setTimeout(() => { this.flushTimer = undefined; void this.flush(); }, RETRY_MS);
    }
  }
}
