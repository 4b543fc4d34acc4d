import {
  createTroupeClient, TroupeApiError, TroupeUnreachableError, unwrap, type components, type paths,
} from '../../../http/client/index.js';
import { sameOriginFetch } from './redirects.js';
import { ServerPace, type CallKind } from './server-pace.js';

/**
 * Every HTTP call the worker makes, through the typed client generated from the OpenAPI document (http/client,
 * decision 0039), so each path, body and reply is checked by the compiler. The worker's logic sees two failures:
 * `ApiError` (the server answered with an error status: `status`, `code`, the error body) and `Unreachable` (no
 * answer: the server is down, the network broke, or it answered too late).
 */
type PollReply = paths['/api/daemon/poll']['post']['responses']['200']['content']['application/json'];
export type OfferedSession = PollReply['sessions'][number];

/** The `data` of the daemon event stream's events, as the OpenAPI document declares them. */
export type DaemonOfferEvent = components['schemas']['DaemonOfferEvent'];
export type DaemonStopEvent = components['schemas']['DaemonStopEvent'];
export type CredentialRotatedEvent = components['schemas']['CredentialRotatedEvent'];

export interface Mutation {
  readonly id: string;
  readonly op: string;
  readonly params: Record<string, unknown>;
}

export type Registration = paths['/v1/daemon/register']['post']['responses']['200']['content']['application/json'];

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string | undefined, message: string, readonly body: unknown) {
    super(message);
  }
}

export class Unreachable extends Error {}

export interface WorkerApi {
  register(body: { registrationToken: string; hostname: string; maxAgents: number }): Promise<Registration>;
  heartbeat(token: string, body: { workerId: string; activeSessionIds: string[]; load: number }): Promise<{ mutations: Mutation[]; runtimeJwt?: string }>;
  poll(token: string, body: { workerId: string; capacity: number }): Promise<{ sessions: OfferedSession[] }>;
  status(token: string, sessionId: string, body: StatusBody): Promise<{ previousStatus: string; newStatus: string }>;
  steps(token: string, sessionId: string, body: StepsBody): Promise<unknown>;
  output(token: string, sessionId: string, body: { workerId: string; chunks: string[]; relay?: { id: string; firstChunk: number } }): Promise<unknown>;
  stepHeartbeat(token: string, sessionId: string, body: { workerId: string }): Promise<unknown>;
  heldSessions(token: string): Promise<{ sessions: { id: string; status: string }[] }>;
  /** The token of a session's run for its agent's line to the team (decision 0088). */
  agentToken(token: string, sessionId: string, body: { workerId: string }): Promise<{ token: string; expiresAt: string; run: number }>;
  /** Opens an event stream; the caller reads `body`. */
  /** Opens an event stream; `lastEventId` resumes it after that event. */
  stream(token: string, path: '/api/daemon/events' | '/api/daemon/credentials/stream', signal: AbortSignal, lastEventId?: string): Promise<Response>;
}

type StatusBody = paths['/api/sessions/{id}/status']['post']['requestBody']['content']['application/json'];
type StepsBody = paths['/api/sessions/{id}/steps']['post']['requestBody']['content']['application/json'];

export type ReportStatus = paths['/api/sessions/{id}/status']['post']['requestBody']['content']['application/json']['status'];

/**
 * At most `max` requests in flight; the rest wait their turn. A worker taking 200 sessions at once would otherwise
 * open a connection per request (fetch has no per-origin limit) and keep their buffers in memory long after.
 * A counter and a queue: a dependency for this would be larger than the code.
 */
export function concurrencyLimit(max: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    if (active >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/** Maps the client's failures onto the worker's two; a refusal asking to slow down holds back its kind (./server-pace.ts). */
async function call<T>(pending: Promise<T>, pace?: { readonly pace: ServerPace; readonly kind: CallKind }): Promise<T> {
  try {
    return await pending;
  } catch (err) {
    if (err instanceof TroupeApiError) {
      pace?.pace.heard(pace.kind, err.status, err.body);
      throw new ApiError(err.status, err.code, err.message, err.body);
    }
    if (err instanceof TroupeUnreachableError || (err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError'))) {
      throw new Unreachable(err.message);
    }
    throw err;
  }
}

/** `onRedirectRefused` hears of each redirect to another origin, which fails its call as Unreachable (redirects.ts). */
export function createWorkerApi(
  baseUrl: string, timeoutMs = 15_000, onRedirectRefused: (from: string, to: string) => void = () => undefined, pace = new ServerPace(),
): WorkerApi {
  const api = createTroupeClient({ baseUrl, timeoutMs, fetch: sameOriginFetch(onRedirectRefused) });
  // The heartbeat and the streams never wait behind a burst of session calls.
  const inTurn = concurrencyLimit(8);
  const auth = (token: string) => ({ authorization: `Bearer ${token}` });
  /** A call of `kind`, sent once the server's last word on that kind allows it. */
  const paced = <T>(kind: CallKind, send: () => Promise<T>): Promise<T> => call(pace.ready(kind).then(send), { pace, kind });
  return {
    register: (body) => call(unwrap(api.POST('/v1/daemon/register', { body }))),
    heartbeat: async (token, body) => {
      const reply = await paced('control', () => unwrap(api.POST('/api/daemon/heartbeat', { body, headers: auth(token) })));
      return { mutations: reply.mutations, ...(reply.runtimeJwt ? { runtimeJwt: reply.runtimeJwt } : {}) };
    },
    poll: (token, body) => paced('control', () => inTurn(() => unwrap(api.POST('/api/daemon/poll', { body, headers: auth(token) })))),
    status: (token, id, body) => paced('reports', () => inTurn(() => unwrap(api.POST('/api/sessions/{id}/status', { params: { path: { id } }, body, headers: auth(token) })))),
    output: (token, id, body) => paced('reports', () => inTurn(() => unwrap(api.POST('/api/sessions/{id}/output', { params: { path: { id } }, body, headers: auth(token) })))),
    steps: (token, id, body) => paced('reports', () => inTurn(() => unwrap(api.POST('/api/sessions/{id}/steps', { params: { path: { id } }, body, headers: auth(token) })))),
    stepHeartbeat: (token, id, body) => paced('reports', () => inTurn(() => unwrap(api.POST('/api/sessions/{id}/step-heartbeat', { params: { path: { id } }, body, headers: auth(token) })))),
    heldSessions: (token) => paced('control', () => inTurn(() => unwrap(api.GET('/api/daemon/sessions', { headers: auth(token) })))),
    agentToken: (token, id, body) => paced('reports', () => inTurn(() => unwrap(api.POST('/api/sessions/{id}/agent-token', { params: { path: { id } }, body, headers: auth(token) })))),
    async stream(token, path, signal, lastEventId) {
      const headers = { ...auth(token), accept: 'text/event-stream', ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) };
      const outcome = await call(api.GET(path, { headers, parseAs: 'stream', signal }));
      if (!outcome.response.ok) await call(unwrap(Promise.resolve(outcome)));
      return outcome.response;
    },
  };
}
