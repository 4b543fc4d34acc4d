import { eventStream, streamEvents, TroupeApiError, unwrap, type components, type StreamEvent, type TroupeApi } from '../../http/client/index.js';

/**
 * Following one session live until it ends (`troupe session watch`): its status changes from the org's session
 * event stream, its agent output from the session's interview stream, both resumed with Last-Event-ID when a
 * connection drops. The detail is read after both streams are open, so nothing that happens in between is missed;
 * what arrived on the streams while the detail was being read is reconciled against it instead of printed twice.
 */

export type SessionDetail = Awaited<ReturnType<typeof readDetail>>;
type StatusEvent = components['schemas']['SessionStatusEvent'];
type DeltaEvent = components['schemas']['InterviewDeltaEvent'];

export const TERMINAL_STATUSES: readonly string[] = ['completed', 'failed', 'stopped'];

/** What a watch reports, in order: the session as first read, output and status changes as they come, its end. */
export interface WatchPrinter {
  start(detail: SessionDetail): void;
  output(text: string): void;
  status(event: StatusEvent): void;
  notice(message: string): void;
  end(detail: SessionDetail): void;
}

export interface WatchOptions {
  /** Aborting stops watching (the session goes on). */
  readonly signal?: AbortSignal;
  /** How long to wait after the terminal status for the last output frames (interview frames are ≤ 100 ms late). */
  readonly trailingOutputMs?: number;
  /** A slow re-read of the detail, in case a terminal change was missed while a stream was down. */
  readonly recheckMs?: number;
  /** How long the output stream is held after the detail was read, to match what it relays late against the tail. */
  readonly reconcileMs?: number;
  /** The longest a status change waits for output kept before it, which travels on the slower stream. */
  readonly statusHoldMs?: number;
}

/** Interview frames leave the node at most 100 ms after their output was kept; the rest is the trip to the watch. */
const RECONCILE_MS = 400;
const STATUS_HOLD_MS = RECONCILE_MS;
/** The longest the watch waits for a late output stream to relay past the kept tail before it goes live. */
const CATCH_UP_MS = 5_000;

export async function readDetail(api: TroupeApi, id: string, signal?: AbortSignal) {
  return unwrap(api.GET('/api/public/sessions/{id}', { params: { path: { id } }, ...(signal ? { signal } : {}) }));
}

/** Follows the session until it is terminal; resolves with its final detail, or undefined when `signal` aborted. */
export async function watchSession(api: TroupeApi, id: string, printer: WatchPrinter, options: WatchOptions = {}): Promise<SessionDetail | undefined> {
  const first = await readDetail(api, id, options.signal);
  if (TERMINAL_STATUSES.includes(first.status)) {
    printer.start(first);
    if (first.output?.tail) printer.output(first.output.tail);
    printer.end(first);
    return first;
  }

  const stop = new AbortController();
  const abort = () => stop.abort();
  options.signal?.addEventListener('abort', abort, { once: true });
  let reachedEnd!: () => void;
  const ended = new Promise<void>((resolve) => { reachedEnd = resolve; });
  let failed: ((err: unknown) => void) | undefined;
  const broken = new Promise<never>((_, reject) => { failed = reject; });
  broken.catch(() => undefined); // awaited in the races below; a refusal after the end is not an error

  // Until the detail has been printed, stream events are held back and reconciled with it.
  let live = false;
  const heldStatus: StatusEvent[] = [];
  const heldOutput: string[] = [];
  let status = first.status;
  const statuses = new StatusAfterOutput(options.statusHoldMs ?? STATUS_HOLD_MS, (e) => {
    printer.status(e);
    if (TERMINAL_STATUSES.includes(e.status)) reachedEnd();
  });
  const onStatus = (e: StatusEvent) => {
    if (e.sessionId !== id) return;
    if (!live) return void heldStatus.push(e);
    if (e.status === status) return;
    status = e.status;
    statuses.add(e);
  };
  const onOutput = (e: DeltaEvent) => {
    const text = e.tokens.join('');
    if (!live) return void heldOutput.push(text);
    printer.output(text);
    statuses.outputSeen(e.at);
  };
  const recheck = async () => {
    const now = await readDetail(api, id, stop.signal).catch(() => undefined);
    if (now && TERMINAL_STATUSES.includes(now.status) && !TERMINAL_STATUSES.includes(status)) {
      status = now.status;
      reachedEnd();
    }
  };

  const events = follow(api, 'status', stop.signal, (e) => {
    if (e.event === 'session.status') onStatus(e.data as StatusEvent);
    else if (e.event === 'reset') void recheck();
  }, recheck, printer, (err) => failed?.(err), first.project.id);
  const output = follow(api, { interview: id }, stop.signal, (e) => {
    if (e.event === 'interview.delta') onOutput(e.data as DeltaEvent);
  }, async () => undefined, printer, (err) => failed?.(err));

  const timer = setInterval(() => void recheck(), options.recheckMs ?? 15_000);
  try {
    await Promise.race([Promise.all([events.connected, output.connected]), broken]);
    const detail = await readDetail(api, id, stop.signal);
    printer.start(detail);
    const tail = detail.output?.tail ?? '';
    if (tail) printer.output(tail);
    // Output kept before the read may still be on its way to the stream (frames are up to 100 ms late): hold the
    // stream a little longer, so all of it is matched against the tail rather than printed a second time.
    await sleep(options.reconcileMs ?? RECONCILE_MS, stop.signal);
    // A stream that is still relaying output from inside the tail is behind (a loaded node relays late): matched now,
    // only its start would overlap the tail and the rest would print twice, so wait for it to pass the tail's end.
    for (let waited = 0; waited < CATCH_UP_MS && behindTail(tail, heldOutput.join('')) && !stop.signal.aborted; waited += 50) {
      await sleep(50, stop.signal);
    }
    const unseen = unseenSuffix(tail, heldOutput.join(''));
    if (unseen) printer.output(unseen);
    status = detail.status;
    const since = Date.parse(detail.timeline.at(-1)?.at ?? '') || 0;
    live = true;
    for (const e of heldStatus) if (Date.parse(e.at) > since) onStatus(e);
    if (TERMINAL_STATUSES.includes(status)) reachedEnd();

    const aborted = new Promise<void>((resolve) => stop.signal.addEventListener('abort', () => resolve(), { once: true }));
    await Promise.race([ended, aborted, broken]);
    if (stop.signal.aborted) return undefined;
    await sleep(options.trailingOutputMs ?? 300);
    // Changes still held for output (the end can be known before their hold is over: a re-read, a late join).
    statuses.flush();
    stop.abort();
    const final = await readDetail(api, id);
    printer.end(final);
    return final;
  } finally {
    clearInterval(timer);
    statuses.clear();
    stop.abort();
    options.signal?.removeEventListener('abort', abort);
    await Promise.allSettled([events.done, output.done]);
  }
}

/**
 * Status changes come on the org's session stream at once; the output kept before them comes on the interview
 * stream, relayed in frames up to 100 ms late. So a change is printed once output kept after it has been printed
 * (all before it has then arrived: frames come in order), or after `holdMs`, whichever is first; without this the
 * last lines of an agent's output would print after the session already said `completed`.
 */
export class StatusAfterOutput {
  private readonly waiting: { event: StatusEvent; timer: NodeJS.Timeout }[] = [];

  constructor(private readonly holdMs: number, private readonly print: (e: StatusEvent) => void) {}

  add(event: StatusEvent): void {
    const timer = setTimeout(() => this.releaseThrough(event), this.holdMs);
    this.waiting.push({ event, timer });
  }

  /** Output kept at `at` has been printed: every change made before it is now in order. */
  outputSeen(at: string): void {
    const kept = Date.parse(at);
    let last: StatusEvent | undefined;
    for (const w of this.waiting) if (Date.parse(w.event.at) <= kept) last = w.event;
    if (last) this.releaseThrough(last);
  }

  /** Prints every change still waiting, in order. */
  flush(): void {
    const last = this.waiting.at(-1);
    if (last) this.releaseThrough(last.event);
  }

  clear(): void {
    for (const w of this.waiting.splice(0)) clearTimeout(w.timer);
  }

  /** Prints `event` and every change that came before it, in the order they came. */
  private releaseThrough(event: StatusEvent): void {
    const upTo = this.waiting.findIndex((w) => w.event === event);
    for (const w of this.waiting.splice(0, upTo + 1)) {
      clearTimeout(w.timer);
      this.print(w.event);
    }
  }
}

/** `held` (output streamed so far) lies inside `tail` short of its end: the stream has more of the tail to relay. */
export function behindTail(tail: string, held: string): boolean {
  return held.length > 0 && !tail.endsWith(held) && tail.includes(held);
}

/**
 * The part of `held` (output streamed while the detail was read) that the detail's tail does not already end
 * with: the longest prefix of `held` that is a suffix of `tail` was stored before the detail was read.
 */
export function unseenSuffix(tail: string, held: string): string {
  for (let k = Math.min(tail.length, held.length); k > 0; k--) {
    if (tail.endsWith(held.slice(0, k))) return held.slice(k);
  }
  return held;
}

interface Followed {
  /** Resolves once the stream answered (its events from then on are seen). */
  readonly connected: Promise<void>;
  readonly done: Promise<void>;
}

/**
 * Keeps one event stream open until `signal` aborts: reconnects after a drop (1 s, doubling to 10 s) with the last
 * event id, and calls `onReconnect` so the caller can re-read what it may have missed. A refusal (4xx other than
 * 429) cannot be cured by retrying and ends the watch through `onFatal`.
 */
function follow(
  api: TroupeApi, stream: 'status' | { interview: string }, signal: AbortSignal, onEvent: (e: StreamEvent) => void,
  onReconnect: () => Promise<void>, printer: WatchPrinter, onFatal: (err: unknown) => void, projectId?: string,
): Followed {
  let markConnected!: () => void;
  const connected = new Promise<void>((resolve) => { markConnected = resolve; });
  const open = (lastEventId: string | undefined) => {
    const header = lastEventId === undefined ? {} : { header: { 'Last-Event-ID': lastEventId } };
    return stream === 'status'
      ? unwrap(api.GET('/api/sessions/events', { ...eventStream, signal, params: { ...header, query: projectId ? { projectId } : {} } }))
      : unwrap(api.GET('/api/interview/{id}/stream', { ...eventStream, signal, params: { ...header, path: { id: stream.interview } } }));
  };
  const done = (async () => {
    let lastEventId: string | undefined;
    let delayMs = 1000;
    let dropped = false;
    while (!signal.aborted) {
      try {
        const body = await open(lastEventId);
        markConnected();
        if (dropped) {
          printer.notice('reconnected');
          dropped = false;
          delayMs = 1000;
          await onReconnect();
        }
        for await (const event of streamEvents(body, signal)) {
          if (event.id !== undefined) lastEventId = event.id;
          onEvent(event);
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof TroupeApiError && err.status < 500 && err.status !== 429) return onFatal(err);
      }
      if (signal.aborted) return;
      if (!dropped) printer.notice(`lost the ${stream === 'status' ? 'status' : 'output'} stream; reconnecting`);
      dropped = true;
      await sleep(delayMs, signal);
      delayMs = Math.min(delayMs * 2, 10_000);
    }
  })();
  return { connected, done };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}
