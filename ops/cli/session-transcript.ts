import { eventStream, streamEvents, TroupeApiError, unwrap, type components, type TroupeApi } from '../../http/client/index.js';
import { TERMINAL_STATUSES, readDetail } from './session-watch.js';

/**
 * `troupe session transcript ID [--follow]`: a session's whole transcript (issue 35 §1), a page at a time, and with
 * `--follow` live until the session ends. Following goes from the last `seq` read to the transcript's own stream
 * (`…/transcript/stream?after=N`, resumed with `Last-Event-ID` after a drop), which sends exactly the stored entries
 * after N: nothing is printed twice or missed, whatever the timing.
 */
export type TranscriptEntry = components['schemas']['TranscriptEntry'];

export interface TranscriptOptions {
  readonly after: number;
  readonly follow: boolean;
  readonly search?: string;
  readonly signal?: AbortSignal;
  /** First reconnection delay after a dropped stream (doubling to 10 s). */
  readonly reconnectMs?: number;
}

const PAGE = 1000;
const isEnd = (e: TranscriptEntry): boolean => e.kind === 'status' && typeof e.status === 'string' && TERMINAL_STATUSES.includes(e.status);

/**
 * Prints every entry after `after` through `print`; with `follow`, keeps printing new ones until a status entry ends
 * the session (or `signal` aborts). Resolves with the last seq printed.
 */
export async function readTranscript(api: TroupeApi, id: string, print: (e: TranscriptEntry) => void, options: TranscriptOptions): Promise<number> {
  // Read before the pages: a session that is already over when the pages end has nothing more to follow.
  const detail = options.follow ? await readDetail(api, id, options.signal) : undefined;
  let last = options.after;
  let ended = false;
  for (;;) {
    const page = await unwrap(api.GET('/api/public/sessions/{id}/transcript', {
      params: { path: { id }, query: { after: String(last), limit: String(PAGE), ...(options.search ? { q: options.search } : {}) } },
      ...(options.signal ? { signal: options.signal } : {}),
    }));
    for (const entry of page.entries) {
      print(entry);
      last = entry.seq;
      if (isEnd(entry)) ended = true;
      else if (entry.kind === 'status') ended = false;
    }
    // With a search the cursor stays at the last match: following from there, the stream's entries are filtered the same way.
    if (page.next === null) break;
    last = page.next;
  }
  if (!options.follow || options.signal?.aborted) return last;
  if (ended || TERMINAL_STATUSES.includes(detail!.status)) return last;
  return followFrom(api, id, last, print, options);
}

async function followFrom(api: TroupeApi, id: string, after: number, print: (e: TranscriptEntry) => void, options: TranscriptOptions): Promise<number> {
  const stop = new AbortController();
  const abort = () => stop.abort();
  options.signal?.addEventListener('abort', abort, { once: true });
  let last = after;
  let delayMs = options.reconnectMs ?? 1000;
  const search = options.search?.toLowerCase();
  try {
    while (!stop.signal.aborted) {
      try {
        const body = await unwrap(api.GET('/api/public/sessions/{id}/transcript/stream', {
          ...eventStream, signal: stop.signal, params: { path: { id }, query: { after: String(last) } },
        }));
        delayMs = options.reconnectMs ?? 1000;
        for await (const event of streamEvents(body, stop.signal)) {
          if (event.event !== 'transcript.entry') continue;
          const entry = event.data as TranscriptEntry;
          // Entries come in seq order from after `last`; one already printed (a resumed stream) is never printed again.
          if (entry.seq <= last) continue;
          last = entry.seq;
          if (!search || entry.text.toLowerCase().includes(search)) print(entry);
          if (isEnd(entry)) return last;
        }
      } catch (err) {
        if (stop.signal.aborted) break;
        if (err instanceof TroupeApiError && err.status < 500 && err.status !== 429) throw err;
      }
      if (stop.signal.aborted) break;
      // The stream ended or dropped: was the end missed while it was down? Otherwise wait and resume after `last`.
      const now = await readDetail(api, id, stop.signal).catch(() => undefined);
      if (now && TERMINAL_STATUSES.includes(now.status)) {
        return readTranscript(api, id, print, { ...options, after: last, follow: false });
      }
      await sleep(delayMs, stop.signal);
      delayMs = Math.min(delayMs * 2, 10_000);
    }
    return last;
  } finally {
    options.signal?.removeEventListener('abort', abort);
    stop.abort();
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

/** One entry as a line of text: output as the agent printed it, everything else marked, with its seq and time. */
export function renderEntry(e: TranscriptEntry): string {
  const time = e.at.slice(11, 23);
  if (e.kind === 'output') return `${e.text}\n`;
  return `── #${e.seq} ${time} ${e.kind}: ${e.text.replaceAll('\n', '\n   ')}\n`;
}
