/**
 * Invariant (issue 30, item 10): a session's status change stored while the broker is frozen and not yet found out
 * (its announcement cannot be published) never leaves a live subscriber holding the old status without knowing: once
 * the broker is back, the subscriber hears the change or a reset, after which a reload reads the true status. One node
 * on private engines; the broker frozen with SIGSTOP.
 */
import { expect } from 'chai';
import { saveNodeLogsIfFailed, startFaultWorld, type FaultWorld } from './world.js';
import { callNode, msUntil, provisionTenant, readyz, type Tenant } from './scenario.js';
import { openSse, type SseClient } from '../integration/streams/sse-client.js';

const skip = process.env.TEST_SKIP_FAULTS === '1';

(skip ? describe.skip : describe)('faults: session announcements while the broker is frozen', function () {
  this.timeout(240_000);
  let world: FaultWorld;
  let tenant: Tenant;
  let watcher: SseClient | undefined;

  before(async () => {
    world = await startFaultWorld({ nodes: 1 });
    tenant = await provisionTenant(world, 1);
  });
  after(async function () {
    watcher?.close();
    world?.engines.rabbitmq.thaw();
    saveNodeLogsIfFailed(this, world);
    await world?.close();
  });

  const call = (method: string, route: string, token: string, body?: unknown) => callNode(world.nodes[0]!, method, route, token, body);

  it('ends every live subscriber on the true status: the change itself, or a reset and a reload', async () => {
    const node = world.nodes[0]!;
    const worker = tenant.workers[0]!;
    const dispatched = await call('POST', '/api/agent-dispatch', tenant.apiKey, { projectId: tenant.projectId, prompt: 'frozen broker' });
    expect(dispatched.status).to.equal(201);
    const id = dispatched.json.sessionId as string;
    const report = (status: string) => call('POST', `/api/sessions/${id}/status`, worker.runtimeJwt, { status, workerId: worker.workerId });
    expect((await report('claimed')).status).to.equal(200);
    watcher = await openSse(`${node.url}/api/sessions/events`, { token: tenant.apiKey });
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
