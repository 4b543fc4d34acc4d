import { performance } from 'node:perf_hooks';
import { TroupeError } from '../ops/kernel/errors.js';
import type { Logger } from '../ops/kernel/logger.js';
import { EdgeTrace, withTrace } from '../ops/kernel/trace-context.js';
import { logContext, type AccessLog } from './access-log.js';
import { OVERLOAD_RETRY_AFTER_SECONDS, type AdmissionGate, type ShedReason } from './admission.js';
import type { AuthDeps } from './authenticate.js';
import { ClientAborted, collectBody, EMPTY_BODY, readBody } from './body.js';
import { clientAddressOf } from './client-address.js';
import type { EventStreams } from './event-streams.js';
import { sendChunked } from './chunked-reply.js';
import { assertSafeHeaders, copyRequest, Exchange, type CopiedRequest } from './exchange.js';
import { answer, answerRead, isPending, JSON_TYPE, refusal, settle, type CompiledRoute, type EdgeHooks, type ErrorAnswer } from './pipeline.js';
import type { ServerState } from './server-state.js';
import type { ChunkedReply, Reply } from './types.js';
import type { UwsRequest, UwsResponse } from './uws.js';

/**
 * A request from uWS's callback to its answer on the socket: copied off the uWS request, its body read, admitted
 * (writes) or served at once (reads), through the route pipeline (./pipeline.ts), then answered and logged. See
 * ops/decisions/0005-http-edge.md for the order of checks.
 */

const OVERLOAD_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'retry-after': String(OVERLOAD_RETRY_AFTER_SECONDS) });
const overloadBodies: Record<ShedReason, string> = {
  queue_full: overloadBody('queue_full'),
  waited_too_long: overloadBody('waited_too_long'),
};
function overloadBody(reason: ShedReason): string {
  const err = new TroupeError('OVERLOADED', undefined, { reason, retryAfterSeconds: OVERLOAD_RETRY_AFTER_SECONDS });
  return JSON.stringify({ error: err.message, code: err.code, details: err.details });
}

/** What a server lends each of its requests; `state` is the only part that changes. */
export interface FlowParts<D extends AuthDeps> {
  readonly deps: D;
  readonly hooks: EdgeHooks;
  readonly log: Logger;
  readonly state: ServerState;
  readonly access: AccessLog;
  readonly streams: EventStreams;
  /** The budget for write routes; without it every request is taken in. */
  readonly gate: AdmissionGate | undefined;
  /** Proxies in front that append to X-Forwarded-For. */
  readonly trustProxyHops: number;
}

export class RequestFlow<D extends AuthDeps> {
  constructor(private readonly parts: FlowParts<D>) {}

  /** The synchronous part, inside uWS's callback: copy the request, attach onAborted, start reading the body. */
  accept(c: CompiledRoute<D>, res: UwsResponse, req: UwsRequest): void {
    const started = performance.now();
    const copied = copyRequest(req, c.paramNames.length, c.method, c.headerNames);
    const exchange = new Exchange(res);
    const { state, gate } = this.parts;
    if (state.draining) {
      this.finishWithError(exchange, copied, c.route.path, started, this.shuttingDown(copied, c.route.path));
      return;
    }
    state.inFlight.add(exchange);
    // The request's trace (W3C traceparent, the caller's trace id kept): every log line and every ask or tell
    // made while serving it carries it, to the node that runs the actor (issue 20). Its ids are drawn when first read.
    const trace = new EdgeTrace(copied.headers.traceparent, copied.requestId);
    const viaGate = gate !== undefined && c.admitted;
    const bodyOptions = { limit: c.bodyLimit, declaredLength: copied.headers['content-length'], onAbort: exchange.onAbort };
    // A write waiting for a slot, or a route that checks the source address before the body, is served as a promise.
    if (viaGate || c.route.limitsSource) {
      const body = c.bodyKind === 'none' ? Promise.resolve(EMPTY_BODY) : collectBody(res, bodyOptions);
      if (viaGate) void this.admit(c, exchange, copied, body, started, trace);
      else void withTrace(trace, () => this.serve(c, exchange, copied, body, started, false));
      return;
    }
    if (c.bodyKind === 'none') withTrace(trace, () => this.serveRead(c, exchange, copied, EMPTY_BODY, started));
    else readBody(res, bodyOptions, (body) => withTrace(trace, () => this.serveRead(c, exchange, copied, body, started)));
  }

  /** A path no route serves (404), or a known path asked with another method (405). */
  refuse(res: UwsResponse, req: UwsRequest, err: TroupeError, pattern: string, headers: Record<string, string>): void {
    const started = performance.now();
    const copied = copyRequest(req, 0);
    const exchange = new Exchange(res);
    const answered = this.parts.state.draining
      ? this.shuttingDown(copied, pattern)
      : refusal(undefined, err, this.parts.log, logContext(copied, pattern), headers);
    this.finishWithError(exchange, copied, pattern, started, answered);
  }

  /** A write: served once the admission gate lets it in, or refused at once (`shed`). */
  private async admit(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, body: Promise<Buffer>, started: number, trace: EdgeTrace): Promise<void> {
    // The body is read while the request waits: a client that aborts meanwhile rejects it before anything awaits
    // it, which Node would report as unhandled (and end the process). Whoever awaits it later still sees the error.
    body.catch(() => undefined);
    try {
      await this.parts.gate!.enter();
    } catch (err) {
      try {
        await this.shed(c, exchange, copied, body, started, err);
      } catch (shedErr) {
        this.parts.log.error({ err: shedErr, reqId: copied.requestId }, 'request pipeline failed');
      }
      this.parts.state.finished(exchange);
      return;
    }
    // serve gives the slot back and finishes the exchange.
    await withTrace(trace, () => this.serve(c, exchange, copied, body, started, true));
  }

  private clientAddress(exchange: Exchange, copied: CopiedRequest): () => string {
    const hops = this.parts.trustProxyHops;
    return () => (exchange.clientGone ? '' : clientAddressOf(exchange.res, copied.headers['x-forwarded-for'], hops));
  }

  /**
   * A request whose body is in (or could not be read) and that waits for no admission slot: answered before this
   * returns when the pipeline needed no wait (a quiet heartbeat: no promise, so no async hook, no microtask),
   * otherwise once its reply settles.
   */
  private serveRead(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, body: Buffer | Error, started: number): void {
    const { deps, hooks, log, state } = this.parts;
    let reply: Reply | Promise<Reply>;
    try {
      if (body instanceof Error) throw body;
      reply = answerRead(c, copied, this.clientAddress(exchange, copied), body, deps, hooks);
    } catch (err) {
      this.failed(c, exchange, copied, started, err);
      state.finished(exchange);
      return;
    }
    if (isPending(reply)) {
      void this.serveReply(c, exchange, copied, reply, started, false);
      return;
    }
    if (reply.kind === 'chunks') {
      void this.serveReply(c, exchange, copied, Promise.resolve(reply), started, false);
      return;
    }
    try {
      void this.deliver(c, exchange, copied, reply, started);
    } catch (err) {
      log.error({ err, reqId: copied.requestId }, 'request pipeline failed');
    } finally {
      state.finished(exchange);
    }
  }

  /** A request read in full before it is served (admitted writes, routes that check the source address first). */
  private async serve(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, bodyBytes: Promise<Buffer>, started: number, viaGate: boolean): Promise<void> {
    // A client that gave up while its request waited for a slot costs nothing more.
    if (viaGate && exchange.clientGone) {
      this.parts.gate!.leave();
      this.parts.state.finished(exchange);
      return this.parts.access.record(copied, c.route.path, 499, started);
    }
    const pending = answer(c, copied, this.clientAddress(exchange, copied), bodyBytes, this.parts.deps, this.parts.hooks);
    await this.serveReply(c, exchange, copied, pending, started, viaGate);
  }

  /** Waits for the reply, sends it, and finishes the exchange (giving back its admission slot, `viaGate`). */
  private async serveReply(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, pending: Promise<Reply>, started: number, viaGate: boolean): Promise<void> {
    try {
      let reply;
      try {
        reply = await pending;
      } catch (err) {
        return this.failed(c, exchange, copied, started, err);
      }
      await this.deliver(c, exchange, copied, reply, started);
    } catch (err) {
      this.parts.log.error({ err, reqId: copied.requestId }, 'request pipeline failed');
    } finally {
      if (viaGate) this.parts.gate!.leave();
      this.parts.state.finished(exchange);
    }
  }

  /** Sends a handler's reply: opens its event stream, or writes its status, headers and body. */
  private deliver(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, reply: Reply, started: number): void | Promise<void> {
    const { access, log } = this.parts;
    if (exchange.clientGone) return access.record(copied, c.route.path, 499, started);
    if (reply.kind === 'sse') {
      // Refused before the stream opens, as any other error: its org holds all the places it may on this node.
      const full = this.parts.streams.refusalFor(reply.orgId);
      if (full !== undefined) return this.finishWithError(exchange, copied, c.route.path, started, refusal(c.route, full, log, logContext(copied, c.route.path)));
      return this.parts.streams.open(exchange, copied, c.route.path, reply, started);
    }
    if (reply.kind === 'chunks') return this.deliverChunks(c, exchange, copied, reply, started);
    try {
      const settled = settle(c.route, reply);
      exchange.respond(settled.status, settled.headers, settled.contentType, copied.requestId, settled.body);
      access.record(copied, c.route.path, settled.status, started);
    } catch (err) {
      this.finishWithError(exchange, copied, c.route.path, started, refusal(undefined, err, log, logContext(copied, c.route.path)));
    }
  }

  /** A body produced a chunk at a time (a download): the exchange stays in flight until its last chunk is taken. */
  private async deliverChunks(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, reply: ChunkedReply, started: number): Promise<void> {
    const own: Record<string, string> = { ...reply.headers };
    delete own['x-request-id'];
    delete own['content-type'];
    assertSafeHeaders({ ...own, 'content-type': reply.contentType });
    const headers = { ...own, 'content-type': reply.contentType, 'x-request-id': copied.requestId };
    const status = await sendChunked(exchange, reply.status ?? c.route.successStatus ?? 200, headers, reply.chunks, this.parts.log, copied.requestId);
    this.parts.access.record(copied, c.route.path, status, started);
  }

  /** What the pipeline threw: nothing for a client that is gone, otherwise its `{error, code}` answer. */
  private failed(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, started: number, err: unknown): void {
    if (err instanceof ClientAborted || exchange.clientGone) return this.parts.access.record(copied, c.route.path, 499, started);
    this.finishWithError(exchange, copied, c.route.path, started, refusal(c.route, err, this.parts.log, logContext(copied, c.route.path)));
  }

  /**
   * A write refused by the admission gate: answered once its (small) body is in, so the connection stays usable,
   * with a body written once per reason. Not logged one by one: an overloaded node would spend on its log what it
   * saved by refusing; `troupe_http_shed_total` counts them.
   */
  private async shed(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, body: Promise<Buffer>, started: number, err: unknown): Promise<void> {
    const pattern = c.route.path;
    const { access, log } = this.parts;
    const reason = err instanceof TroupeError ? (err.details?.reason as ShedReason | undefined) : undefined;
    if (reason === undefined) throw err;
    try {
      await body;
    } catch (bodyErr) {
      if (bodyErr instanceof ClientAborted || exchange.clientGone) return access.record(copied, pattern, 499, started);
      // A body over the route's cap is answered as it would be when admitted (413, connection closed).
      return this.finishWithError(exchange, copied, pattern, started, refusal(c.route, bodyErr, log, logContext(copied, pattern)));
    }
    if (exchange.clientGone) return access.record(copied, pattern, 499, started);
    exchange.respond(503, OVERLOAD_HEADERS, JSON_TYPE, copied.requestId, overloadBodies[reason]);
    access.observe(copied.method, pattern, 503, started);
  }

  /** Requests arriving while the node drains: 503, and the connection closed. */
  private shuttingDown(copied: CopiedRequest, pattern: string): ErrorAnswer {
    return { ...refusal(undefined, new TroupeError('SHUTTING_DOWN'), this.parts.log, logContext(copied, pattern)), close: true };
  }

  private finishWithError(exchange: Exchange, copied: CopiedRequest, pattern: string, started: number, refused: ErrorAnswer): void {
    exchange.respond(refused.status, refused.headers, JSON_TYPE, copied.requestId, JSON.stringify(refused.body), refused.close);
    this.parts.access.record(copied, pattern, refused.status, started);
  }
}
