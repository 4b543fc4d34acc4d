/** A minimal SSE client over fetch streams for tests: parses frames and waits for the ones a test expects. */
export interface SseFrame { readonly id?: string; readonly event?: string; readonly data: any }

export interface SseClient {
  readonly status: number;
  readonly frames: SseFrame[];
  /** Resolves with the first frame (from the start of the stream) matching `match`, or rejects after `timeoutMs`. */
  next(match: (f: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame>;
  close(): void;
}

export async function openSse(url: string, init: { token?: string; lastEventId?: string } = {}): Promise<SseClient> {
  const controller = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.lastEventId) headers['last-event-id'] = init.lastEventId;
  const res = await fetch(url, { headers, signal: controller.signal });
  const frames: SseFrame[] = [];
  const waiters = new Set<() => void>();
  if (res.ok && res.body) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const frame: { id?: string; event?: string; data: string[] } = { data: [] };
            for (const line of block.split('\n')) {
              if (line.startsWith('id: ')) frame.id = line.slice(4);
              else if (line.startsWith('event: ')) frame.event = line.slice(7);
              else if (line.startsWith('data: ')) frame.data.push(line.slice(6));
            }
            if (frame.data.length === 0) continue;
            const text = frame.data.join('\n');
            let data: unknown;
            try { data = JSON.parse(text); } catch { data = text; }
            frames.push({ ...(frame.id ? { id: frame.id } : {}), ...(frame.event ? { event: frame.event } : {}), data });
            for (const w of [...waiters]) w();
          }
        }
      } catch { /* aborted */ }
    })();
  } else {
    await res.text().catch(() => undefined);
  }
  return {
    status: res.status,
    frames,
    next(match, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const f = frames.find(match);
          if (f) { waiters.delete(check); clearTimeout(timer); resolve(f); }
        };
        const timer = setTimeout(() => { waiters.delete(check); reject(new Error('timed out waiting for an SSE frame')); }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => controller.abort(),
  };
}
