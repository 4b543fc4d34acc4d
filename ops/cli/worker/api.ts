/**
 * Every HTTP call the worker makes, in one place (the daemon protocol of spec 4.2 and decisions 0021–0023), so the
 * worker's logic never builds a request itself. A call answers the parsed body, or throws `ApiError` (the server
 * answered non-2xx: `status`, `code`) or `Unreachable` (no answer: network, timeout, 5xx from a proxy is ApiError).
 */
export interface OfferedSession {
  readonly id: string;
  readonly projectId: string;
  readonly prompt: string;
  readonly agentCardId?: string;
  readonly workType?: string;
  readonly provider?: string;
  readonly queuedPrompts?: readonly { id: string; text: string }[];
}

export interface Mutation {
  readonly id: string;
  readonly op: string;
  readonly params: Record<string, unknown>;
}

export interface Registration {
  readonly workerId: string;
  readonly runtimeJwt: string;
  readonly heartbeatIntervalSeconds: number;
  readonly pollIntervalSeconds: number;
}

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
  status(token: string, sessionId: string, body: { workerId: string; status: string; costUsd?: number; error?: string }): Promise<{ previousStatus: string; newStatus: string }>;
  output(token: string, sessionId: string, body: { workerId: string; chunks: string[] }): Promise<unknown>;
  stepHeartbeat(token: string, sessionId: string, body: { workerId: string }): Promise<unknown>;
  heldSessions(token: string): Promise<{ sessions: { id: string; status: string }[] }>;
  /** Opens an event stream; the caller reads `body`. */
  stream(token: string, path: '/api/daemon/events' | '/api/daemon/credentials/stream', signal: AbortSignal): Promise<Response>;
}

export function createWorkerApi(baseUrl: string, timeoutMs = 15_000): WorkerApi {
  const url = baseUrl.replace(/\/+$/, '');
  async function call<T>(method: string, path: string, token: string | undefined, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${url}${path}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new Unreachable(`${method} ${path}: ${(err as Error).message}`);
    }
    const text = await res.text().catch(() => '');
    let parsed: unknown;
    try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = text; }
    if (!res.ok) {
      const e = parsed as { error?: string; code?: string } | undefined;
      throw new ApiError(res.status, e?.code, `${method} ${path}: ${res.status}${e?.code ? ` ${e.code}` : ''}: ${e?.error ?? text}`, parsed);
    }
    return parsed as T;
  }
  return {
    register: (body) => call('POST', '/v1/daemon/register', undefined, body),
    heartbeat: (token, body) => call('POST', '/v1/daemon/heartbeat', token, body),
    poll: (token, body) => call('POST', '/v1/daemon/poll', token, body),
    status: (token, id, body) => call('POST', `/api/sessions/${id}/status`, token, body),
    output: (token, id, body) => call('POST', `/api/sessions/${id}/output`, token, body),
    stepHeartbeat: (token, id, body) => call('POST', `/api/sessions/${id}/step-heartbeat`, token, body),
    heldSessions: (token) => call('GET', '/api/daemon/sessions', token),
    async stream(token, path, signal) {
      let res: Response;
      try {
        res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal });
      } catch (err) {
        throw new Unreachable(`GET ${path}: ${(err as Error).message}`);
      }
      if (!res.ok) {
        const text = await res.text().catch(() => '');
        let code: string | undefined;
        try { code = (JSON.parse(text) as { code?: string }).code; } catch { code = undefined; }
        throw new ApiError(res.status, code, `GET ${path}: ${res.status}: ${text}`, text);
      }
      return res;
    },
  };
}
