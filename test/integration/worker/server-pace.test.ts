// Invariant: a worker obeys a node that asks it to slow down: after a 429 (or 503) naming `retryAfterSeconds`, no call
// of that kind reaches the server before that time, whichever loop makes it; calls of the other kind go on; a
// server's word is capped, so a hostile server cannot park a worker for hours.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createWorkerApi } from '../../../ops/cli/worker/api.js';
import { MAX_PACE_SECONDS, ServerPace } from '../../../ops/cli/worker/server-pace.js';

interface Seen { readonly path: string; readonly at: number }

/** Answers the first poll with `refusal`, everything else with what the worker protocol expects. */
async function pacingServer(refusal: { status: number; body: unknown }): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  let refused = false;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '';
      seen.push({ path, at: Date.now() });
      res.setHeader('content-type', 'application/json');
      if (path === '/api/daemon/poll' && !refused) {
        refused = true;
        res.writeHead(refusal.status).end(JSON.stringify(refusal.body));
        return;
      }
      if (path === '/api/daemon/poll') return res.writeHead(200).end(JSON.stringify({ sessions: [] }));
      res.writeHead(200).end(JSON.stringify({ previousStatus: 'claimed', newStatus: 'running' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const rateLimited = (retryAfterSeconds: number) => ({
  status: 429, body: { error: 'rate limited', code: 'RATE_LIMITED', details: { retryAfterSeconds } },
});

describe('a worker obeys the server\'s Retry-After', function () {
  this.timeout(15_000);
  const servers: Server[] = [];
  afterEach(() => { for (const s of servers.splice(0)) s.close(); });

  it('holds back polls and heartbeats until the time a 429 named, while session reports go on', async () => {
    const { url, seen, server } = await pacingServer(rateLimited(1));
    servers.push(server);
    const api = createWorkerApi(url);
    const refusedAt = Date.now();
    const first = await api.poll('t', { workerId: 'w', capacity: 1 }).then(() => 'answered', (err: { status?: number }) => err.status);
    expect(first).to.equal(429);
    // A report is another kind: it is sent at once.
    await api.status('t', 'a1b2c3d4e5f60718', { workerId: 'w', status: 'running' });
    await api.poll('t', { workerId: 'w', capacity: 1 });
    const polls = seen.filter((s) => s.path === '/api/daemon/poll');
    const report = seen.find((s) => s.path.startsWith('/api/sessions/'))!;
    expect(polls).to.have.length(2);
    expect(report.at - refusedAt, 'the report did not wait').to.be.lessThan(500);
    expect(polls[1]!.at - polls[0]!.at, 'the second poll waited for Retry-After').to.be.at.least(950);
  });

  it('takes a 503 with retryAfterSeconds the same way, and ignores refusals that name no time', async () => {
    const { url, seen, server } = await pacingServer({ status: 503, body: { error: 'overloaded', code: 'OVERLOADED', details: { retryAfterSeconds: 1 } } });
    servers.push(server);
    const api = createWorkerApi(url);
    await api.poll('t', { workerId: 'w', capacity: 1 }).catch(() => undefined);
    await api.poll('t', { workerId: 'w', capacity: 1 });
    const polls = seen.filter((s) => s.path === '/api/daemon/poll');
    expect(polls[1]!.at - polls[0]!.at).to.be.at.least(950);

    const pace = new ServerPace(() => 0);
    pace.heard('control', 429, { code: 'RATE_LIMITED' });
    pace.heard('control', 409, { details: { retryAfterSeconds: 5 } });
    pace.heard('control', 429, { details: { retryAfterSeconds: 'soon' } });
    expect(pace.heldUntil('control')).to.equal(undefined);
  });

  it('caps what a server may ask, and keeps the later of two times', () => {
    const pace = new ServerPace(() => 1_000);
    pace.heard('reports', 429, { details: { retryAfterSeconds: 86_400 } });
    expect(pace.heldUntil('reports')).to.equal(1_000 + MAX_PACE_SECONDS * 1000);
    pace.heard('reports', 429, { details: { retryAfterSeconds: 1 } });
    expect(pace.heldUntil('reports'), 'a shorter word does not shorten a longer one').to.equal(1_000 + MAX_PACE_SECONDS * 1000);
    expect(pace.heldUntil('control')).to.equal(undefined);
  });
});
