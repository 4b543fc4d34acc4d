/**
 * Reads a `text/event-stream` body into events (the WHATWG rules the server's streams use: `event:`, `data:` and
 * `id:` lines, a blank line ends an event, `:` lines are comments). Calls `onEvent` for each, with the stream's last
 * event id so far; resolves when the stream ends and
 * rejects when it breaks or stays silent longer than `idleMs` (the server sends a comment every 15 s). Aborting
 * `signal` cancels the body itself: the fetch's own signal does not always reach a body already being read, and a
 * stream left open keeps the worker's process alive after it stopped.
 */
export async function readEvents(
  body: ReadableStream<Uint8Array>, onEvent: (event: string, data: unknown, lastEventId: string | undefined) => void, idleMs: number, signal?: AbortSignal,
): Promise<void> {
  const reader = body.getReader();
  const cancelled = new Promise<never>((_resolve, reject) => {
    const cancel = () => {
      reader.cancel().catch(() => undefined);
      reject(new Error('event stream closed by the worker'));
    };
    if (signal?.aborted) cancel(); else signal?.addEventListener('abort', cancel, { once: true });
  });
  cancelled.catch(() => undefined);
  const decoder = new TextDecoder();
  let buffer = '';
  let event = 'message';
  let data: string[] = [];
  let lastEventId: string | undefined;
  let idle: NodeJS.Timeout | undefined;
  let rearm: () => void = () => {};
  const silent = new Promise<never>((_resolve, reject) => {
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        reader.cancel().catch(() => undefined);
        reject(new Error(`event stream silent for ${idleMs} ms`));
      }, idleMs);
    };
    arm();
    rearm = arm;
  });
  silent.catch(() => undefined);
  try {
    for (;;) {
      const { value, done } = await Promise.race([reader.read(), silent, cancelled]);
      if (done) return;
      rearm();
      buffer += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        if (line === '') {
          if (data.length > 0) {
            const text = data.join('\n');
            let parsed: unknown;
            try { parsed = JSON.parse(text); } catch { parsed = text; }
            onEvent(event, parsed, lastEventId);
          }
          event = 'message';
          data = [];
        } else if (line.startsWith(':')) {
          continue;
        } else {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'event') event = value;
          else if (field === 'data') data.push(value);
          // WHATWG: an id holding NUL is ignored.
          else if (field === 'id' && !value.includes('\0')) lastEventId = value;
        }
      }
    }
  } finally {
    clearTimeout(idle);
  }
}
