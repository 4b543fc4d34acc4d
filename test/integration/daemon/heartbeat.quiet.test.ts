// Invariant: in steady state a quiet heartbeat (nothing pending for that worker) sends no actor message, however
// long the worker has been quiet; a mutation reaches the node's pending index through the daemon-host actor's own
// announcement (also when it was not enqueued through this node's route), so the next heartbeat delivers it.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import sinon from 'sinon';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { daemonServices } from '../../../actors/services/daemon/services.js';
import { daemonHostAddress } from '../../../actors/kinds/daemon-host/index.js';
import { provisionOrg, registerDaemon, type Daemon } from '../sessions/support.js';

for (const { set, skip } of engineSets) describe(`quiet heartbeats (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let d: Daemon;
  let askSpy: sinon.SinonSpy;
  before(async () => {
    t = await startTestNode({ engines: set });
    const acme = await provisionOrg(t, 'Acme');
    d = await registerDaemon(t, acme);
    await eventually(() => daemonServices(t.node.deps).pending.isSeeded, 'the pending index is seeded');
  });
  beforeEach(() => { askSpy = sinon.spy(t.node.deps, 'ask'); });
  afterEach(() => askSpy.restore());
  after(() => t?.close());

  const heartbeat = () => t.call('POST', '/api/daemon/heartbeat', { token: d.runtimeJwt, body: { workerId: d.workerId } });
  const asksOfHost = () => askSpy.getCalls().filter((c) => c.args[0] === daemonHostAddress(d.workerId)).length;

  it('sends no actor message for a worker with nothing pending, also after a long quiet spell', async () => {
    for (let i = 0; i < 3; i++) expect((await heartbeat()).json).to.deep.equal({ ok: true, mutations: [] });
    // Well past any time-to-live a cached "nothing pending" could have had (it has none).
    const realNow = t.node.deps.clock.now.bind(t.node.deps.clock);
    const later = sinon.stub(t.node.deps.clock, 'now').callsFake(() => realNow() + 5 * 60_000);
    try {
      for (let i = 0; i < 3; i++) expect((await heartbeat()).json.mutations).to.deep.equal([]);
    } finally {
      later.restore();
    }
    expect(asksOfHost()).to.equal(0);
  });

  it("learns of a mutation from the actor's announcement and delivers it on the next heartbeat, once", async () => {
    const mutationId = randomUUID();
    // Straight to the actor, as another node's route would: this node's route never sees the reply.
    await t.node.deps.ask(daemonHostAddress(d.workerId), {
      type: 'daemonHost.enqueue', mutationId, op: 'pool.deleted', params: { poolId: 'gpu-a' }, requestedBy: 'user:test',
    });
    const svc = daemonServices(t.node.deps);
    await eventually(() => svc.pending.mayHavePending(d.workerId), 'the announcement reached the index');
    askSpy.resetHistory();
    const first = await heartbeat();
    expect(first.json.mutations.map((m: { id: string }) => m.id)).to.deep.equal([mutationId]);
    expect(asksOfHost()).to.equal(1);
    expect(svc.pending.mayHavePending(d.workerId), 'delivered: quiet again').to.equal(false);
    expect((await heartbeat()).json.mutations).to.deep.equal([]);
    expect(asksOfHost()).to.equal(1);
  });
});
