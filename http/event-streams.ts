import { TroupeError } from '../ops/kernel/errors.js';
import type { Logger } from '../ops/kernel/logger.js';
import type { AccessLog } from './access-log.js';
import type { CopiedRequest, Exchange } from './exchange.js';
import type { HttpMetrics, OrgStreamReading } from './metrics.js';
import type { ServerState } from './server-state.js';
import { defaultSseOptions, parseLastEventId, UwsSseStream, type SseOptions } from './sse.js';
import { HeartbeatWheel } from './sse-heartbeats.js';
import type { SseReply } from './types.js';

/**
 * How long a client refused for its org's streams is told to wait. A place frees only when one of the org's own
 * streams closes, which no one can predict; ten seconds keeps reconnecting clients (EventSource, the worker) from
 * knocking every second.
 */
export const STREAM_REFUSED_RETRY_AFTER_SECONDS = 10;

/**
 * Opens a route's event stream on its exchange and keeps count of it until it closes (`troupe_http_sse_streams`),
 * in all and per org: an org holds at most `streamsPerOrg` on this server (decision 0082).
 */
export class EventStreams {
  private readonly options: SseOptions;
  private readonly heartbeats: HeartbeatWheel;
  /** Open streams by org; an org with none has no entry, so the map is as large as the orgs streaming now. */
  private readonly openByOrg = new Map<string, number>();

  constructor(
    private readonly state: ServerState, sse: Partial<SseOptions> | undefined,
    private readonly metrics: HttpMetrics, private readonly access: AccessLog, private readonly log: Logger,
    private readonly streamsPerOrg: number,
  ) {
    this.options = { ...defaultSseOptions, ...sse };
    this.heartbeats = new HeartbeatWheel(this.options.heartbeatMs);
  }

  /** Open streams of `orgId` on this server. */
  openFor(orgId: string): number {
    return this.openByOrg.get(orgId) ?? 0;
  }

  /** The org holding the most streams here, and how many orgs hold their whole share (`troupe_http_sse_org_streams`). */
  orgReading(): OrgStreamReading {
    let busiest = 0;
    let atLimit = 0;
    for (const open of this.openByOrg.values()) {
      busiest = Math.max(busiest, open);
      if (open >= this.streamsPerOrg) atLimit++;
    }
    return { busiest, atLimit };
  }

  /** TOO_MANY_STREAMS when a stream for `orgId` may not open now, else undefined (streams of no org are not counted). */
  refusalFor(orgId: string | undefined): TroupeError | undefined {
    if (orgId === undefined || this.openFor(orgId) < this.streamsPerOrg) return undefined;
    this.metrics.sseRefused.inc();
    return new TroupeError('TOO_MANY_STREAMS', undefined, {
      limit: this.streamsPerOrg, setting: 'TROUPE_STREAMS_PER_ORG', retryAfterSeconds: STREAM_REFUSED_RETRY_AFTER_SECONDS,
    });
  }

  /** Opens the stream, after `refusalFor` let it: nothing awaits in between, so no other stream of its org slips in. */
  open(exchange: Exchange, copied: CopiedRequest, pattern: string, reply: SseReply, started: number): void {
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
    this.track(stream, reqId, pattern, reply.orgId);
    Promise.resolve()
      .then(() => reply.open(stream))
      .catch((err: unknown) => {
        this.log.error({ err, reqId, route: pattern }, 'event stream handler failed');
        stream.close();
      });
  }

  private track(stream: UwsSseStream, reqId: string, pattern: string, orgId: string | undefined): void {
    const { state, metrics, log, openByOrg } = this;
    state.streams.add(stream);
    metrics.sseStreams.inc();
    if (orgId !== undefined) openByOrg.set(orgId, this.openFor(orgId) + 1);
    stream.onClose(() => {
      state.streams.delete(stream);
      metrics.sseStreams.dec();
      if (orgId !== undefined) {
        const left = this.openFor(orgId) - 1;
        if (left > 0) openByOrg.set(orgId, left);
        else openByOrg.delete(orgId);
      }
      const cut = stream.cutOff;
      if (cut) {
        metrics.sseCutOff.inc();
        log.warn({ reqId, route: pattern, ...cut }, cut.reason === 'backlog' ? 'event stream cut off: client too far behind' : 'event stream cut off: client stopped reading');
      }
    });
  }
}
