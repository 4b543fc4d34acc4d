import type { Registry } from 'prom-client';
import type { Logger } from '../ops/kernel/logger.js';
import { AccessLog } from './access-log.js';
import { AdmissionGate, type AdmissionOptions } from './admission.js';
import type { AuthDeps } from './authenticate.js';
import { EventStreams } from './event-streams.js';
import { httpMetrics } from './metrics.js';
import { compileRoute, type EdgeHooks } from './pipeline.js';
import { RequestFlow } from './request-flow.js';
import { ServerState } from './server-state.js';
import type { SseOptions } from './sse.js';
import type { Route } from './types.js';
import { listen, registerRoutes } from './uws-app.js';
import { loadUws, type TemplatedApp } from './uws.js';

export interface HttpServerOptions<D extends AuthDeps> extends EdgeHooks {
  readonly routes: readonly Route<D>[];
  readonly deps: D;
  readonly host: string;
  /** 0 picks a free port (tests); the chosen one is `HttpServer.port`. */
  readonly port: number;
  readonly log: Logger;
  readonly metrics: Registry;
  readonly sse?: Partial<SseOptions>;
  /** Event streams one org may hold open on this server at once (config `streamsPerOrg`). @default unlimited */
  readonly streamsPerOrg?: number;
  /** Proxies in front that append to X-Forwarded-For (config `trustProxyHops`). @default 0 */
  readonly trustProxyHops?: number;
  /** The budget for write routes (http/admission.ts); without it every request is taken in. */
  readonly admission?: AdmissionOptions;
}

export interface HttpServer {
  readonly port: number;
  /**
   * Stops accepting connections, ends open event streams, waits up to `graceMs` for in-flight requests to be
   * answered, then drops whatever is left. Requests arriving on kept-alive connections meanwhile get 503.
   */
  close(graceMs: number): Promise<void>;
}

/**
 * Starts one uWS server for a route table. A request's way through it is in request-flow.ts, event streams in
 * event-streams.ts, the state they share with the shutdown in server-state.ts.
 */
export async function startHttpServer<D extends AuthDeps>(options: HttpServerOptions<D>): Promise<HttpServer> {
  const uws = loadUws();
  const { log } = options;
  const metrics = httpMetrics(options.metrics);
  const compiled = options.routes.map((route) => compileRoute(route, options));
  const state = new ServerState();
  const access = new AccessLog(log, metrics.duration);
  const gate = options.admission === undefined ? undefined : new AdmissionGate(options.admission, { onShed: (reason) => metrics.shed.labels(reason).inc() });
  const streams = new EventStreams(state, options.sse, metrics, access, log, options.streamsPerOrg ?? Number.POSITIVE_INFINITY);
  const flow = new RequestFlow<D>({
    deps: options.deps, hooks: options, log, state, access, gate, trustProxyHops: options.trustProxyHops ?? 0, streams,
  });
  const unwatchAdmission = gate === undefined ? undefined : metrics.watchAdmission(() => ({ serving: gate.serving, waiting: gate.waiting }));
  const unwatchInFlight = metrics.watchInFlight(() => state.inFlight.size);
  const unwatchOrgStreams = metrics.watchOrgStreams(() => streams.orgReading());

  const app = uws.App();
  registerRoutes(app, compiled, flow);
  const listenSocket = await listen(app, options.host, options.port);
  const port = uws.us_socket_local_port(listenSocket as never);
  log.info({ host: options.host, port }, 'http server listening');

  return {
    port,
    async close(graceMs: number): Promise<void> {
      if (state.draining) return;
      state.draining = true;
      unwatchAdmission?.();
      unwatchInFlight();
      unwatchOrgStreams();
      uws.us_listen_socket_close(listenSocket);
      await state.drain(graceMs, log);
      // Closes idle kept-alive connections too, so nothing of ours keeps the event loop alive.
      (app as TemplatedApp & { close(): void }).close();
      log.info({ port }, 'http server closed');
    },
  };
}
