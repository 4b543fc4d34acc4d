import { createParser, type EventSourceMessage } from 'eventsource-parser';

/**
 * Reading the API's event streams (`GET /api/sessions/events`, `/api/interview/{id}/stream`, …) through the typed
 * client: ask for the body as a stream, then iterate its events.
 *
 *   const body = await unwrap(api.GET('/api/sessions/events', { ...eventStream, signal }));
 *   for await (const event of streamEvents(body, signal)) if (event.event === 'session.status') …
 *
 * The events' `data` types are in the generated `components['schemas']` (e.g. `SessionStatusEvent`), named in the
 * document's `x-sse-events` of each stream.
 */

/** Spread into a call's options: the reply is read as a stream, and the client's request timeout does not apply. */
export const eventStream = { parseAs: 'stream', headers: { accept: 'text/event-stream' } } as const;

export interface StreamEvent {
  /** The event's id, to resume after it with `Last-Event-ID`; absent on events that cannot be resumed from. */
  readonly id: string | undefined;
  /** The event name (`message` when the server named none). */
  readonly event: string;
  /** `data` parsed as JSON (the API sends JSON), or the raw text when it is not. */
  readonly data: unknown;
}

/**
 * The events of an event-stream body until it ends (the server closed it, or `signal` aborted it). Leaving the loop
 * early cancels the body, which closes the connection. Pass the request's `signal` here too: Node's fetch follows
 * the signal of a `Request` object (which the typed client builds) only weakly, so after a garbage collection an
 * abort may never reach a body that is being read, and the connection would stay open.
 */
export async function* streamEvents(body: ReadableStream<Uint8Array> | null | undefined, signal?: AbortSignal): AsyncGenerator<StreamEvent> {
  if (!body) return;
  const parsed: StreamEvent[] = [];
  const parser = createParser({ onEvent: (message) => parsed.push(toEvent(message)) });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const cancel = () => { reader.cancel(signal?.reason).catch(() => undefined); };
  if (signal?.aborted) cancel(); else signal?.addEventListener('abort', cancel, { once: true });
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      while (parsed.length > 0) yield parsed.shift()!;
    }
    finished = !signal?.aborted;
  } finally {
    signal?.removeEventListener('abort', cancel);
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

function toEvent(message: EventSourceMessage): StreamEvent {
  let data: unknown = message.data;
  try {
    data = JSON.parse(message.data);
  } catch {
    // Not JSON: keep the text.
  }
  return { id: message.id || undefined, event: message.event || 'message', data };
}
