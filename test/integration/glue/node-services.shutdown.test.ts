// Invariant: a node's room services are part of its life cycle. They run from boot (a node that has served no
// request still sweeps leases) and a graceful close flushes what they buffered: the lastToolCalledAt of a step
// heartbeat answered just before `node.close()` and the worker's liveness are in the database afterwards.
import { expect } from 'chai';
import type { TroupeNode } from '../../../ops/node.js';
import { withPostgresSchema, type TestDb } from '../../support/db.js';
import { dispatch, provisionOrg, registerDaemon, report } from '../sessions/support.js';
import { asTestNode, nodesOver } from './support.js';

describe('glue: node services start at boot and flush on close', function () {
  this.timeout(60_000);
  let db: TestDb;
  let node: TroupeNode | undefined;
  before(async () => { db = await withPostgresSchema('glue_services'); });
  after(async () => { await node?.close(); await db?.drop(); });

  it('writes the step heartbeat and liveness recorded just before close', async () => {
    const nodes = nodesOver(db, 'services');
    node = await nodes.boot();
    const t = asTestNode(node, nodes.adminToken);
    const org = await provisionOrg(t, 'Flush');
    const d = await registerDaemon(t, org);
    const id = await dispatch(t, org);
    expect((await report(t, d, id, 'claimed')).status).to.equal(200);
    expect((await report(t, d, id, 'running')).status).to.equal(200);
    // Liveness is kept to the second: set well back, so the flush on close shows as a move forward.
    const before = new Date(Date.now() - 60_000);
    await db.knex('daemon_workers').where({ id: d.workerId }).update({ last_seen_at: before });

    const beat = await t.call('POST', `/api/sessions/${id}/step-heartbeat`, { token: d.runtimeJwt, body: { workerId: d.workerId } });
    expect(beat.json).to.deep.equal({ ok: true });
    const answeredAt = Date.now();
    await node.close();
    node = undefined;

    const session = await db.knex('sessions').where({ org_id: org.orgId, public_id: id }).first('last_tool_called_at');
    expect(session.last_tool_called_at, 'the step heartbeat reached the database').to.not.equal(null);
    expect(new Date(session.last_tool_called_at).getTime()).to.be.within(answeredAt - 5_000, answeredAt);
    const worker = await db.knex('daemon_workers').where({ id: d.workerId }).first('last_seen_at');
    expect(new Date(worker.last_seen_at).getTime(), 'liveness flushed too').to.be.within(answeredAt - 5_000, answeredAt);
  });

  it('reads the session lease from TROUPE_SESSION_LEASE_MS', async () => {
    const nodes = nodesOver(db, 'lease');
    node = await nodes.boot({ sessionLeaseMs: 4_000 });
    const { daemonServices } = await import('../../../actors/services/daemon/services.js');
    expect(daemonServices(node.deps).leaseMs).to.equal(4_000);
    await node.close();
    node = undefined;
  });
});
