// Invariant: an operator reads the fleet from /metrics: sessions by status, live workers, the queue's depth and the
// time sessions waited between dispatch and claim, on both engine sets.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { dispatch, provisionOrg, registerDaemon, report } from '../sessions/support.js';

const sample = (text: string, name: string, labels = ''): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

for (const { set, skip } of engineSets) {
  describe(`fleet metrics on ${set} engines`, function () {
    if (skip) return;
    this.timeout(60_000);
    let t: TestNode;
    before(async () => { t = await startTestNode({ engines: set }); });
    after(async () => { await t?.close(); });

    it('counts sessions by status, live workers and queue depth, and times dispatch to claim', async () => {
      const org = await provisionOrg(t, 'Metrics');
      const daemon = await registerDaemon(t, org);
      const ids = [await dispatch(t, org), await dispatch(t, org), await dispatch(t, org)];
      await new Promise((resolve) => setTimeout(resolve, 300));
      const poll = await t.call('POST', '/api/daemon/poll', { token: daemon.runtimeJwt, body: { workerId: daemon.workerId, capacity: 1 } });
      expect(poll.status).to.equal(200);
      const claimed = (await report(t, daemon, ids[0]!, 'claimed'));
      expect(claimed.status, claimed.text).to.equal(200);
      // The claim wait is observed by an effect of the durable claim, which may run just after the reply.
      let metrics = '';
      await eventually(async () => {
        metrics = (await t.call('GET', '/metrics')).text;
        return sample(metrics, 'troupe_session_claim_wait_seconds_count') === 1;
      }, 'the claim wait observed', 5000).catch(() => undefined);
      expect(sample(metrics, 'troupe_sessions', 'status="pending"')).to.equal(2);
      expect(sample(metrics, 'troupe_sessions', 'status="claimed"')).to.equal(1);
      expect(sample(metrics, 'troupe_session_queue_depth')).to.equal(2);
      expect(sample(metrics, 'troupe_workers_live')).to.equal(1);
      expect(sample(metrics, 'troupe_session_claim_wait_seconds_count')).to.equal(1);
      expect(sample(metrics, 'troupe_session_claim_wait_seconds_sum')).to.be.within(0.3, 10);
    });
  });
}
