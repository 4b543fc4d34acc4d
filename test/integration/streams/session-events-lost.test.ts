// Invariant (issue 30, item 10): a session event the transport refuses (a broker down, or frozen and not yet found
// out) never leaves a live subscriber holding a stale status without knowing: once the transport takes messages
// again the org's streams get `event: reset`, after which a reload shows the true status. Another org's streams
// hear nothing of it.
import { expect } from 'chai';
import sinon from 'sinon';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, report, type Org } from '../sessions/support.js';
import { openSse, type SseClient } from './sse-client.js';

for (const { set, skip } of engineSets) describe(`session events the transport refused (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  const open: SseClient[] = [];

  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
  });
  afterEach(() => { sinon.restore(); for (const c of open.splice(0)) c.close(); });
  after(() => t?.close());

  const sse = async (token: string) => {
    const c = await openSse(`${t.url}/api/sessions/events`, { token });
    open.push(c);
    expect(c.status).to.equal(200);
    return c;
  };

  it('turns the lost events into a reset of the org streams once the transport is back', async () => {
    const daemon = await registerDaemon(t, acme);
    const watcher = await sse(acme.apiKey);
    const bystander = await sse(globex.apiKey);
    const id = await dispatch(t, acme);
    await watcher.next((f) => f.data?.sessionId === id && f.data.status === 'pending');

    const transport = t.node.deps.transport;
    const publish = transport.publish.bind(transport);
    let refused = 0;
    let down = true;
    sinon.stub(transport, 'publish').callsFake(async (topic: string, event: unknown) => {
      if (down && topic.endsWith('.session.changed')) {
        refused += 1;
        throw new Error('broker unreachable');
      }
      return publish(topic, event);
    });
    expect((await report(t, daemon, id, 'claimed')).status).to.equal(200);
    expect((await report(t, daemon, id, 'running')).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(refused, 'the two events and at least one reset were refused').to.be.at.least(3);
    expect(watcher.frames.some((f) => f.data?.status === 'running' || f.event === 'reset'), 'nothing arrives while the transport refuses').to.equal(false);

    down = false;
    await watcher.next((f) => f.event === 'reset', 5_000);
    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.json.status, 'the reload shows the true status').to.equal('running');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bystander.frames.some((f) => f.event === 'reset'), "another org's stream is not reset").to.equal(false);
  });
});
