// Invariant (issue 30, the rule behind 1, 2 and 5; decision 0082): every credential's work and memory on a node is
// bounded by a number an operator can read.
// - An org holds at most TROUPE_STREAMS_PER_ORG event streams on a node, whatever routes and credentials open them:
//   one more is 429 TOO_MANY_STREAMS, naming the setting, before the stream opens; another org still opens streams;
//   a closed stream frees its place.
// - A worker (runtime token) past TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE gets 429 with Retry-After, while
//   another worker's heartbeats and its own polls pass.
import { expect } from 'chai';
import { loadConfig } from '../../ops/config.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { provisionOrg, type ProvisionedOrg } from '../integration/governance/governance-fixtures.js';
import { openSse, type SseClient } from '../integration/streams/sse-client.js';
import { eventually } from '../support/transport.js';

const STREAMS_PER_ORG = 3;
const HEARTBEATS_PER_MINUTE = 60;
const REPORTS_PER_MINUTE = 60;

describe('hostile: an org\'s streams and a worker\'s requests are bounded on the node', function () {
  this.timeout(60_000);
  let t: TestNode;
  let noisy: ProvisionedOrg;
  let quiet: ProvisionedOrg;
  const open: SseClient[] = [];

  before(async () => {
    // The limits as an operator sets them: through the environment, read and checked as at a node's start.
    const fromEnv = loadConfig({
      TROUPE_STREAMS_PER_ORG: String(STREAMS_PER_ORG),
      TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE: String(HEARTBEATS_PER_MINUTE),
      TROUPE_RATE_LIMIT_WORKER_REPORTS_PER_MINUTE: String(REPORTS_PER_MINUTE),
    });
    t = await startTestNode({
      config: {
        streamsPerOrg: fromEnv.streamsPerOrg, rateLimitWorkerHeartbeatsPerMinute: fromEnv.rateLimitWorkerHeartbeatsPerMinute,
        rateLimitWorkerReportsPerMinute: fromEnv.rateLimitWorkerReportsPerMinute,
      },
    });
    noisy = await provisionOrg(t);
    quiet = await provisionOrg(t);
  });
  afterEach(() => { for (const c of open.splice(0)) c.close(); });
  after(async () => { await t?.close(); });

  async function worker(org: ProvisionedOrg, hostname: string): Promise<{ workerId: string; runtimeJwt: string }> {
    const issued = await t.inject('POST', `/api/org/${org.orgId}/registration-tokens`, { token: org.ownerToken, body: { name: hostname, projects: [org.projectId] } });
    expect(issued.status, issued.text).to.equal(201);
    const res = await t.inject('POST', '/v1/daemon/register', { body: { registrationToken: issued.json.registrationToken, hostname, maxAgents: 1 } });
    expect(res.status, res.text).to.equal(200);
    return res.json;
  }

  async function stream(path: string, token: string): Promise<SseClient> {
    const client = await openSse(`${t.url}${path}`, { token });
    open.push(client);
    return client;
  }

  /** `troupe_http_sse_org_streams` as the node's /metrics shows it. */
  async function orgStreams(): Promise<Record<string, number>> {
    const text = (await t.call('GET', '/metrics')).text;
    const reading: Record<string, number> = {};
    for (const m of text.matchAll(/^troupe_http_sse_org_streams\{measure="(\w+)"[^}]*\} (\d+)$/gm)) reading[m[1]!] = Number(m[2]);
    return reading;
  }

  it('refuses the stream one past the org\'s cap, whatever route opens it, and leaves other orgs alone', async () => {
    const noisyWorker = await worker(noisy, 'streamer');
    // Three routes, two credentials, one org: all count against the same places.
    const held = [
      await stream('/api/sessions/events', noisy.ownerToken),
      await stream('/api/interview/noisy-chat/stream', noisy.ownerToken),
      await stream('/api/daemon/events', noisyWorker.runtimeJwt),
    ];
    for (const s of held) expect(s.status).to.equal(200);

    const refused = await t.call('GET', '/api/sessions/events', { token: noisy.ownerToken, headers: { accept: 'text/event-stream' } });
    expect(refused.status, refused.text).to.equal(429);
    expect(refused.json).to.include({ code: 'TOO_MANY_STREAMS' });
    expect(refused.json.error).to.contain('TROUPE_STREAMS_PER_ORG');
    expect(refused.json.details).to.include({ limit: STREAMS_PER_ORG });
    expect(Number(refused.headers.get('retry-after'))).to.be.at.least(1);
    expect((await stream('/api/daemon/events', noisyWorker.runtimeJwt)).status).to.equal(429);

    // An operator sees it without a series per org: the busiest org holds its whole share, one org is at its limit.
    expect(await orgStreams()).to.deep.equal({ busiest: STREAMS_PER_ORG, at_limit: 1 });

    // Another org is untouched: it opens as many as its own cap.
    for (let i = 0; i < STREAMS_PER_ORG; i++) expect((await stream('/api/sessions/events', quiet.ownerToken)).status).to.equal(200);
    expect(await orgStreams()).to.deep.equal({ busiest: STREAMS_PER_ORG, at_limit: 2 });

    // A closed stream frees its place (once the node has seen the socket close).
    held[0]!.close();
    await eventually(async () => {
      const again = await stream('/api/sessions/events', noisy.ownerToken);
      return again.status === 200;
    }, 'a place freed by a closed stream');
  });

  it('answers a worker past its heartbeat limit 429 with Retry-After, and keeps its polls and other workers going', async () => {
    const flooder = await worker(noisy, 'flooder');
    const neighbour = await worker(quiet, 'neighbour');
    const beat = (w: { workerId: string; runtimeJwt: string }) =>
      t.call('POST', '/api/daemon/heartbeat', { token: w.runtimeJwt, body: { workerId: w.workerId, activeSessionIds: [], load: 0 } });

    for (let i = 0; i < HEARTBEATS_PER_MINUTE; i++) {
      const ok = await beat(flooder);
      expect(ok.status, `heartbeat ${i + 1}: ${ok.text}`).to.equal(200);
    }
    const limited = await beat(flooder);
    expect(limited.status, limited.text).to.equal(429);
    expect(limited.json).to.include({ code: 'RATE_LIMITED' });
    expect(limited.json.error).to.contain('TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE');
    expect(limited.json.details).to.include({ limit: HEARTBEATS_PER_MINUTE, windowSeconds: 60 });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).to.be.within(1, 60);
    // The deprecated alias is the same worker's same limit.
    expect((await t.call('POST', '/v1/daemon/heartbeat', { token: flooder.runtimeJwt, body: { workerId: flooder.workerId } })).status).to.equal(429);

    // Its polls count on their own, and another worker's heartbeats are untouched.
    const poll = await t.call('POST', '/api/daemon/poll', { token: flooder.runtimeJwt, body: { workerId: flooder.workerId, capacity: 1 } });
    expect(poll.status, poll.text).to.equal(200);
    for (let i = 0; i < 5; i++) expect((await beat(neighbour)).status).to.equal(200);
  });

  it("counts a worker's status reports against their own limit, apart from its heartbeats", async () => {
    const reporter = await worker(noisy, 'reporter');
    // Made-up sessions: each report is refused 404 after it was counted, as a flood of bogus reports would be.
    const report = (i: number) => t.call('POST', `/api/sessions/s_madeup${String(i).padStart(6, '0')}/status`, {
      token: reporter.runtimeJwt, body: { workerId: reporter.workerId, status: 'running' },
    });
    for (let i = 0; i < REPORTS_PER_MINUTE; i++) expect((await report(i)).status).to.not.equal(429);
    const limited = await report(REPORTS_PER_MINUTE);
    expect(limited.status, limited.text).to.equal(429);
    expect(limited.json.error).to.contain('TROUPE_RATE_LIMIT_WORKER_REPORTS_PER_MINUTE');
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
    const beat = await t.call('POST', '/api/daemon/heartbeat', { token: reporter.runtimeJwt, body: { workerId: reporter.workerId } });
    expect(beat.status, beat.text).to.equal(200);
  });
});
