import net from 'node:net';
import { Registry } from 'prom-client';
import { pino, type Logger } from 'pino';
import { Writable } from 'node:stream';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Authenticator } from '../../actors/services/identity/ports.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { startHttpServer, type HttpServer } from '../../http/server.js';
import type { SseOptions } from '../../http/sse.js';
import type { EdgeHooks } from '../../http/pipeline.js';
import type { AdmissionOptions } from '../../http/admission.js';
import type { Route } from '../../http/types.js';

/**
 * TEST DOUBLE. Maps fixed bearer tokens (and one session cookie) to principals, so HTTP-edge tests can exercise every
 * auth mode without the identity room. The real Authenticator lives in actors/services/identity; this one only honours the
 * port's contract: undefined for no credential, AUTH_INVALID for an unknown one.
 */
export class FakeAuthenticator implements Authenticator {
  constructor(private readonly byToken: Readonly<Record<string, Principal>>, private readonly bySessionCookie: Readonly<Record<string, Principal>> = {}) {}

  async resolve(credentials: { authorization?: string | undefined; cookie?: string | undefined }): Promise<Principal | undefined> {
    if (credentials.authorization !== undefined) {
      const token = /^Bearer (.+)$/i.exec(credentials.authorization)?.[1];
      const principal = token === undefined ? undefined : this.byToken[token];
      if (!principal) throw new TroupeError('AUTH_INVALID');
      return principal;
    }
    const session = credentials.cookie?.match(/(?:^|;\s*)troupe_session=([^;]+)/)?.[1];
    if (session !== undefined) {
      const principal = this.bySessionCookie[session];
      if (!principal) throw new TroupeError('AUTH_INVALID');
      return principal;
    }
    return undefined;
  }
}

export const testPrincipals = {
  user: { kind: 'user', userId: 'u1', orgId: 'o1', orgRole: 'member', via: 'token' },
  cookieUser: { kind: 'user', userId: 'u2', orgId: 'o1', orgRole: 'admin', via: 'cookie' },
  apiKey: { kind: 'apiKey', keyId: 'k1', orgId: 'o1', scopes: [] },
  machine: { kind: 'machine', clientId: 'c1', orgId: 'o1', scopes: [] },
  runtime: { kind: 'runtime', workerId: 'w1', orgId: 'o1', projectIds: ['p1'], registrationId: 'r1', scopes: [] },
} as const satisfies Record<string, Principal>;

export const testAdminToken = 'test-admin-token-0123456789abcdef';

/** Bearer tokens the FakeAuthenticator knows, one per principal kind. */
export const testTokens = {
  admin: testAdminToken,
  user: 'user-token',
  apiKey: 'trp_apikey',
  machine: 'machine-token',
  runtime: 'runtime-token',
  session: 'session-cookie-value',
} as const;

export interface TestDeps {
  readonly auth: Authenticator;
  readonly config: { readonly adminToken: string };
  readonly metrics: Registry;
}

export function testDeps(): TestDeps {
  return {
    auth: new FakeAuthenticator(
      {
        [testTokens.user]: testPrincipals.user,
        [testTokens.apiKey]: testPrincipals.apiKey,
        [testTokens.machine]: testPrincipals.machine,
        [testTokens.runtime]: testPrincipals.runtime,
      },
      { [testTokens.session]: testPrincipals.cookieUser },
    ),
    config: { adminToken: testAdminToken },
    metrics: new Registry(),
  };
}

/** A pino logger whose lines are kept as parsed objects, for asserting what was (and was not) logged. */
export function capturingLogger(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'debug' }, sink), lines };
}

export interface CallResult {
  status: number;
  headers: Headers;
  /** Parsed body when it is JSON, otherwise undefined. */
  json: any;
  text: string;
}

export interface CallOptions {
  /** An object or array is sent as JSON; a string or Buffer as-is. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface TestServer {
  readonly server: HttpServer;
  readonly port: number;
  readonly url: string;
  readonly deps: TestDeps;
  readonly lines: Array<Record<string, unknown>>;
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  close(graceMs?: number): Promise<void>;
}

export async function startTestServer(
  routes: readonly Route<TestDeps>[],
  options: { deps?: TestDeps; sse?: Partial<SseOptions>; hooks?: EdgeHooks; admission?: AdmissionOptions } = {},
): Promise<TestServer> {
  const deps = options.deps ?? testDeps();
  const { log, lines } = capturingLogger();
  const server = await startHttpServer({
    routes, deps, host: '127.0.0.1', port: 0, log, metrics: deps.metrics, ...options.hooks, ...(options.sse ? { sse: options.sse } : {}),
    ...(options.admission ? { admission: options.admission } : {}),
  });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    server,
    port: server.port,
    url,
    deps,
    lines,
    call: (method, path, callOptions = {}) => call(url, method, path, callOptions),
    close: (graceMs = 1000) => server.close(graceMs),
  };
}

export async function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined;
  if (typeof options.body === 'string' || Buffer.isBuffer(options.body)) {
    body = options.body;
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  let json: unknown;
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) json = JSON.parse(text);
  return { status: res.status, headers: res.headers, json, text };
}

/** Sends raw bytes on a fresh connection and resolves with everything the server wrote back before closing. */
export function rawExchange(port: number, head: string, body: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => {
      received += d.toString('latin1');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve(received) : reject(err)));
    socket.on('close', () => resolve(received));
    socket.write(head);
    socket.write(body);
  });
}
