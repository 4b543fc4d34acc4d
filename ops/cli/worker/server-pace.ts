import { sleep } from './backoff.js';

/**
 * The server's requests to slow down, obeyed. A node refuses a worker past its rate limits with 429 and, when it is
 * overloaded or a dependency is down, with 503; both carry `retryAfterSeconds` (and the Retry-After header). Until
 * that time has passed, every call of the same kind waits before it is sent, whichever loop makes it, so no retry
 * schedule of its own (backoff, the poll after an offer, a report queue) can run ahead of the server's word.
 * Kinds follow the node's limits: `control` (heartbeat, poll, held sessions) and `reports` (a session's status,
 * output, steps and step heartbeats).
 */
export type CallKind = 'control' | 'reports';

/** A server's word is capped: a hostile or broken server must not park a worker for hours. */
export const MAX_PACE_SECONDS = 300;

export class ServerPace {
  private readonly notBefore = new Map<CallKind, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Resolves once calls of `kind` may be sent again. */
  async ready(kind: CallKind, signal?: AbortSignal): Promise<void> {
    const until = this.notBefore.get(kind);
    if (until === undefined) return;
    const wait = until - this.now();
    if (wait <= 0) {
      this.notBefore.delete(kind);
      return;
    }
    await sleep(wait, signal);
  }

  /** Takes note of a refusal: a 429 or 503 whose body names `retryAfterSeconds` holds back its kind until then. */
  heard(kind: CallKind, status: number, body: unknown): void {
    if (status !== 429 && status !== 503) return;
    const seconds = retryAfterSecondsOf(body);
    if (seconds === undefined) return;
    const until = this.now() + Math.min(seconds, MAX_PACE_SECONDS) * 1000;
    this.notBefore.set(kind, Math.max(until, this.notBefore.get(kind) ?? 0));
  }

  /** When calls of `kind` may be sent again (ms since the epoch), or undefined when they may be sent now. */
  heldUntil(kind: CallKind): number | undefined {
    const until = this.notBefore.get(kind);
    return until !== undefined && until > this.now() ? until : undefined;
  }
}

function retryAfterSecondsOf(body: unknown): number | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const details = (body as { details?: unknown }).details;
  if (typeof details !== 'object' || details === null) return undefined;
  const seconds = (details as { retryAfterSeconds?: unknown }).retryAfterSeconds;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}
