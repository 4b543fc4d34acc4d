import type { Logger } from '../ops/kernel/logger.js';
import type { AccessLog } from './access-log.js';
import type { CopiedRequest, Exchange } from './exchange.js';
import type { HttpMetrics } from './metrics.js';
import type { ServerState } from './server-state.js';
import { defaultSseOptions, parseLastEventId, UwsSseStream, type SseOptions } from './sse.js';
import { HeartbeatWheel } from './sse-heartbeats.js';

/** Opens a route's event stream on its exchange and keeps count of it until it closes (`troupe_http_sse_streams`). */
export class EventStreams {
  private readonly options: SseOptions;
  private readonly heartbeats: HeartbeatWheel;

  constructor(
    private readonly state: ServerState, sse: Partial<SseOptions> | undefined,
    private readonly metrics: HttpMetrics, private readonly access: AccessLog, private readonly log: Logger,
  ) {
    this.options = { ...defaultSseOptions, ...sse };
    this.heartbeats = new HeartbeatWheel(this.options.heartbeatMs);
  }

  open(exchange: Exchange, copied: CopiedRequest, pattern: string, open: (s: UwsSseStream) => void | Promise<void>, started: number): void {
    // The closures below live as long as the stream: they keep the request id, never the copied request and its
    // headers (a bearer token alone is ~0.5 KB, against a budget of 4 KB per stream, PERFORMANCE.md G6).
    const reqId = copied.requestId;
    const headers = {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'x-request-id': reqId,
    };
    if (!exchange.startStream(200, headers, ':ok\n\n')) return this.access.record(copied, pattern, 499, started);
    this.access.record(copied, pattern, 200, started);
    const stream = new UwsSseStream(exchange.res, parseLastEventId(copied.headers['last-event-id']), this.options, exchange.onAbort, this.log, this.heartbeats);
    if (this.state.draining) {
      stream.close();
      return;
    }
    this.track(stream, reqId, pattern);
    Promise.resolve()
      .then(() => open(stream))
      .catch((err: unknown) => {
        this.log.error({ err, reqId, route: pattern }, 'event stream handler failed');
        stream.close();
      });
  }

  private track(stream: UwsSseStream, reqId: string, pattern: string): void {
    const { state, metrics, log } = this;
    state.streams.add(stream);
    metrics.sseStreams.inc();
    stream.onClose(() => {
      state.streams.delete(stream);
      metrics.sseStreams.dec();
      const cut = stream.cutOff;
      if (cut) {
        metrics.sseCutOff.inc();
        log.warn({ reqId, route: pattern, ...cut }, cut.reason === 'backlog' ? 'event stream cut off: client too far behind' : 'event stream cut off: client stopped reading');
      }
    });
  }
}
