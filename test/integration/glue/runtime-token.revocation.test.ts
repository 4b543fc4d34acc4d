// Invariant: revoking a registration token cuts off every worker registered with it. The worker's runtime JWT is
// refused (401) on the very next heartbeat, and still refused by a fresh node over the same database, where no
// memo entry exists for the revocation event to clear; a worker of a live registration keeps working there.
import { expect } from 'chai';
import type { TroupeNode } from '../../../ops/node.js';
import { withPostgresSchema, type TestDb } from '../../support/db.js';
import { provisionOrg, registerDaemon, type Daemon } from '../sessions/support.js';
import { asTestNode, nodesOver } from './support.js';

describe('glue: runtime tokens of a revoked registration', function () {
  this.timeout(60_000);
  let db: TestDb;
  const running: TroupeNode[] = [];
  before(async () => { db = await withPostgresSchema('glue_reg_revoke'); });
  after(async () => { for (const n of running) await n.close(); await db?.drop(); });

  it('are 401 at once, and still 401 on a fresh node over the same database', async () => {
    const nodes = nodesOver(db, 'revoke');
    const first = await nodes.boot();
    running.push(first);
    const t = asTestNode(first, nodes.adminToken);
    const acme = await provisionOrg(t, 'Acme');
    const heartbeat = (node: TroupeNode, d: Daemon) =>
      asTestNode(node, nodes.adminToken).inject('POST', '/api/daemon/heartbeat', { token: d.runtimeJwt, body: { workerId: d.workerId } });

    const doomed = await registerDaemon(t, acme);
    expect((await heartbeat(first, doomed)).status, 'memoised before the revocation').to.equal(200);
    const second = await t.inject('POST', `/api/org/${acme.orgId}/registration-tokens`, { token: acme.ownerToken, body: { name: 'kept' } });
    expect(second.status, second.text).to.equal(201);
    const kept = await registerDaemon(t, { ...acme, registrationToken: second.json.registrationToken, registrationTokenId: second.json.id });

    const revoked = await t.inject('DELETE', `/api/org/${acme.orgId}/registration-tokens/${acme.registrationTokenId}`, { token: acme.ownerToken });
    expect(revoked.status, revoked.text).to.equal(200);
    expect((await heartbeat(first, doomed)).status, 'refused at once').to.equal(401);
    const poll = await t.inject('POST', '/api/daemon/poll', { token: doomed.runtimeJwt, body: { workerId: doomed.workerId, capacity: 1 } });
    expect(poll.status).to.equal(401);
    expect((await heartbeat(first, kept)).status, 'another registration is untouched').to.equal(200);

    const fresh = await nodes.boot();
    running.push(fresh);
    expect((await heartbeat(fresh, doomed)).status, 'a fresh node has no memo to clear, and still refuses').to.equal(401);
    expect((await heartbeat(fresh, kept)).status).to.equal(200);
  });
});
