/**
 * Invariant (issue 30, items 9 and 10): an outcome a node could not know never turns into a lie.
 * - A session's completion whose COMMIT went through but whose answer was lost (the link to Postgres cut right after
 *   the server committed) is never refused when the worker retries it: the first try gets 503 (the outcome is unknown
 *   to the node too), the retry 200, not STORAGE_STALE_VERSION nor 409 ILLEGAL_TRANSITION; the node never takes its
 *   own write for another owner's; a live subscriber of the org's session events hears `completed`.
 * - A status change stored while the broker is frozen and not yet found out (its announcement cannot be published)
 *   reaches a live subscriber after the thaw, as the change or as a reset after which a reload reads it.
 * One node on private engines; the cut made by the Postgres proxy, the freeze by SIGSTOP.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { saveNodeLogsIfFailed, startFaultWorld, type FaultWorld } from './world.js';
import { callNode, msUntil, provisionTenant, readyz, sleep, type Tenant } from './scenario.js';
import { openSse, type SseClient } from '../integration/streams/sse-client.js';
import { sessionKey } from '../../actors/kinds/session/index.js';

const skip = process.env.TEST_SKIP_FAULTS === '1';

(skip ? describe.skip : describe)('faults: outcomes a node could not know', function () {
  this.timeout(240_000);
  let world: FaultWorld;
  let tenant: Tenant;
  const watchers: SseClient[] = [];

  before(async () => {
    world = await startFaultWorld({ nodes: 1 });
    tenant = await provisionTenant(world, 1);
  });
  after(async function () {
    for (const w of watchers) w.close();
    world?.engines.rabbitmq.thaw();
    saveNodeLogsIfFailed(this, world);
    await world?.close();
  });

  const call = (method: string, route: string, token: string, body?: unknown) => callNode(world.nodes[0]!, method, route, token, body);

  it('answers the retried completion 200, and the live stream ends on completed', async () => {
    const node = world.nodes[0]!;
    const worker = tenant.workers[0]!;
    const watcher = await openSse(`${node.url}/api/sessions/events`, { token: tenant.apiKey });
    watchers.push(watcher);
    expect(watcher.status).to.equal(200);
    const trackerSessionId = `troupe:${randomUUID()}`;
    const dispatched = await call('POST', '/api/agent-dispatch', tenant.apiKey, { projectId: tenant.projectId, prompt: 'lost commit', trackerSessionId });
    expect(dispatched.status, JSON.stringify(dispatched.json)).to.equal(201);
    const id = dispatched.json.sessionId as string;
    const report = (status: string) => call('POST', `/api/sessions/${id}/status`, worker.runtimeJwt, { status, workerId: worker.workerId });
    for (const status of ['claimed', 'running', 'finalizing']) expect((await report(status)).status, status).to.equal(200);

    const cut = world.proxies.postgres.loseCommitAnswer(`session/${sessionKey(tenant.orgId, trackerSessionId)}`);
    const first = await report('completed');
    await cut;
    expect(first.status, `the try whose commit answer was lost: ${JSON.stringify(first.json)}`).to.equal(503);

    // The worker retries as its report queue does, through 503s, until it is answered.
    const answers: Array<{ status: number; code?: string }> = [];
    for (let i = 0; i < 60; i++) {
      const again = await report('completed');
      answers.push({ status: again.status, code: again.json?.code });
      if (again.status !== 503) break;
      await sleep(250);
    }
    expect(answers.at(-1), JSON.stringify(answers)).to.deep.equal({ status: 200, code: undefined });
    expect(answers.filter((a) => a.code === 'STORAGE_STALE_VERSION'), 'never stale').to.deep.equal([]);
    expect(node.lines.some((l) => l.includes('snapshot written by another owner')), 'no own write taken for another owner\'s').to.equal(false);

    const detail = await call('GET', `/api/public/sessions/${id}`, tenant.apiKey);
    expect(detail.json.status).to.equal('completed');
    // The node recognised its own write when it read it back, and announced it then: the subscriber hears `completed`.
    await watcher.next((f) => f.data?.sessionId === id && f.data.status === 'completed', 15_000);
    expect(node.lines.some((l) => l.includes('a write whose outcome was unknown had committed'))).to.equal(true);
  });

  it('ends every live subscriber on the true status: the change itself, or a reset and a reload', async () => {
    const node = world.nodes[0]!;
    const worker = tenant.workers[0]!;
    const dispatched = await call('POST', '/api/agent-dispatch', tenant.apiKey, { projectId: tenant.projectId, prompt: 'frozen broker' });
    expect(dispatched.status).to.equal(201);
    const id = dispatched.json.sessionId as string;
    const report = (status: string) => call('POST', `/api/sessions/${id}/status`, worker.runtimeJwt, { status, workerId: worker.workerId });
    expect((await report('claimed')).status).to.equal(200);
    const watcher = await openSse(`${node.url}/api/sessions/events`, { token: tenant.apiKey });
    watchers.push(watcher);
    expect(watcher.status).to.equal(200);

    world.engines.rabbitmq.freeze();
    // Before the node finds the broker frozen, the transition is stored and its announcement cannot go out.
    const running = await report('running');
    await msUntil(async () => (await readyz(node)) === 503, 10_000);
    world.engines.rabbitmq.thaw();
    expect(await msUntil(async () => (await readyz(node)) === 200, 30_000), 'ready again after the thaw').not.to.equal(undefined);

    expect(running.status, `the transition was stored before the freeze was noticed: ${JSON.stringify(running.json)}`).to.equal(200);
    const heard = await watcher.next((f) => (f.data?.sessionId === id && f.data.status === 'running') || f.event === 'reset', 30_000);
    // A reset means "reload": the reload reads the true status.
    if (heard.event === 'reset') expect((await call('GET', `/api/public/sessions/${id}`, tenant.apiKey)).json.status).to.equal('running');
  });
});
