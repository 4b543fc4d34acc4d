import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small malicious Troupe server, for `worker.hostile-server.test.ts`: it speaks enough of the worker protocol
 * (register, heartbeat, poll, the two event streams, held sessions, session status and output) for a real worker
 * to register and take work, and it mixes into every answer what a compromised server could send: session ids that
 * are path parts (`../victim/…`, absolute paths), ids with control characters that forge log lines, huge strings,
 * ids of the wrong type or case, mutations that are log injections, and redirects to another origin (`evil`, a
 * second server here that only counts what reaches it). One good session is offered among them. What the worker
 * sent is kept for the test to judge.
 */
export const GOOD_SESSION = 'a1b2c3d4e5f60718';
export const PROJECT = 'prj_good';
/** A line the server tries to forge in the worker's text log. */
export const FORGED = '2099-01-01T00:00:00.000Z ERROR session 0000000000000000 forged by the server';

export interface SessionCall { readonly id: string; readonly route: string; readonly body: any }

export interface HostileServer {
  readonly url: string;
  readonly evilUrl: string;
  /** Every `/api/sessions/<id>/…` call the worker made, `id` decoded. */
  readonly sessionCalls: SessionCall[];
  /** Every request that reached the other origin, with its authorization header (if any). */
  readonly evilRequests: { url: string; authorization: string | undefined }[];
  /** How often each hostile surface was served, so the test knows the worker met each one. */
  readonly served: Record<'heldSessions' | 'polls' | 'offers' | 'heartbeats' | 'redirects', number>;
  close(): Promise<void>;
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** Ids no worker may use as a path part or write to its log as they are. */
export function hostileIds(victimDir: string): unknown[] {
  return [
    '../victim/agentdir', '../../victim/agentdir', `${victimDir}/absolute`, '..', '.', '',
    `abcd\n${FORGED}`, `abcd\r${FORGED}`, `abcd\u2028${FORGED}`, '\u001b[2J\u001b[31mred\u009b0m',
    'f'.repeat(200_000), 'A1B2C3D4E5F60718', 'a1b2c3d4e5f6071', 42, null, { id: GOOD_SESSION },
  ];
}

export async function startHostileServer(victimDir: string): Promise<HostileServer> {
  const sessionCalls: SessionCall[] = [];
  const evilRequests: HostileServer['evilRequests'] = [];
  const served = { heldSessions: 0, polls: 0, offers: 0, heartbeats: 0, redirects: 0 };
  const streams = new Set<ServerResponse>();
  const workerId = randomUUID();
  const runtimeJwt = `${b64url({ alg: 'none' })}.${b64url({ exp: Math.floor(Date.now() / 1000) + 3600, prj: [PROJECT] })}.sig`;
  const ids = hostileIds(victimDir);
  const offers = () => ids.map((id) => ({ id, projectId: PROJECT, prompt: 'hostile' }));
  let goodClaimed = false;

  const evil = await listen(createServer((req, res) => {
    evilRequests.push({ url: req.url ?? '', authorization: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }));
  const evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;

  const json = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const redirect = (res: ServerResponse, to: string) => {
    served.redirects++;
    res.writeHead(307, { location: `${evilUrl}${to}` }).end();
  };

  const server = await listen(createServer(async (req, res) => {
    const body = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://x');
    const route = `${req.method} ${url.pathname}`;
    if (route === 'POST /v1/daemon/register') {
      return json(res, 200, { workerId, runtimeJwt, heartbeatIntervalSeconds: 1, pollIntervalSeconds: 1 });
    }
    if (route === 'POST /api/daemon/heartbeat') {
      served.heartbeats++;
      return json(res, 200, {
        mutations: [
          { id: 'm1', op: `project.add\n${FORGED}`, params: { projectId: '\u001b[2J\u009b31m' } },
          { id: 'm2', op: 'x'.repeat(200_000), params: {} },
          { id: 'm3', op: 'pool.deleted', params: { poolId: `p\r\n${FORGED}` } },
        ],
      });
    }
    if (route === 'POST /api/daemon/poll') {
      served.polls++;
      return json(res, 200, { sessions: [...offers(), ...(goodClaimed ? [] : [{ id: GOOD_SESSION, projectId: PROJECT, prompt: 'the good work' }])] });
    }
    if (route === 'GET /api/daemon/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      streams.add(res);
      res.once('close', () => streams.delete(res));
      res.write('event: ready\ndata: {}\n\n');
      for (const session of offers()) {
        served.offers++;
        res.write(`event: offer\ndata: ${JSON.stringify({ session })}\n\n`);
      }
      // Ended soon, so the worker reconnects, and reconciles with the held list, while the good session runs.
      setTimeout(() => res.end(), 1500).unref();
      return;
    }
    if (route === 'GET /api/daemon/credentials/stream') return redirect(res, '/steal/credentials');
    if (route === 'GET /api/daemon/sessions') {
      served.heldSessions++;
      const held = [
        { id: '../../victim/precious', status: 'running' }, { id: `${victimDir}/precious`, status: 'running' },
        ...ids.filter((id) => typeof id === 'string').map((id) => ({ id, status: 'claimed' })),
        ...(goodClaimed ? [{ id: GOOD_SESSION, status: 'running' }] : []),
      ];
      return json(res, 200, { sessions: held });
    }
    const session = /^\/api\/sessions\/([^/]+)\/([a-z-]+)$/.exec(url.pathname);
    if (req.method === 'POST' && session) {
      const id = decodeURIComponent(session[1]!);
      const call = { id, route: session[2]!, body: parse(body) };
      sessionCalls.push(call);
      if (call.route === 'step-heartbeat') return redirect(res, `/steal/${session[1]}`);
      if (call.route === 'status') {
        if (id === GOOD_SESSION && call.body?.status === 'claimed') goodClaimed = true;
        return json(res, 200, { previousStatus: 'pending', newStatus: call.body?.status });
      }
      return json(res, 200, {});
    }
    return json(res, 404, { error: 'not found', code: 'NOT_FOUND' });
  }));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, evilUrl, sessionCalls, evilRequests, served,
    async close() {
      for (const s of streams) s.destroy();
      await Promise.all([server, evil].map((s) => new Promise<void>((resolve) => { s.closeAllConnections(); s.close(() => resolve()); })));
    },
  };
}

function listen(server: Server): Promise<Server> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

function parse(text: string): any {
  try { return JSON.parse(text); } catch { return undefined; }
}
