// Invariant (spec 4.2, 6.6): a credential rotation's audit write is deferred and non-fatal. With the audit store
// refusing the rotation's entry, the rotation still answers 200 with what it did and still reaches the org's
// rotate-stream subscribers; once the store accepts writes again, the next rotation is audited as usual.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, registerDaemon, type Daemon, type Org } from '../sessions/support.js';
import { openSse, type SseClient } from '../streams/sse-client.js';

/** A storage fault on exactly this entry type: the insert into the audit outbox fails as a broken disk would make it. */
const FAULT_ON = [
  `create function refuse_rotation_audit() returns trigger language plpgsql as $$
   begin
     if new.type = 'credential.rotated' then raise exception 'audit store refuses writes (test fault)'; end if;
     return new;
   end $$`,
  'create trigger refuse_rotation_audit before insert on audit_outbox for each row execute function refuse_rotation_audit()',
];
const FAULT_OFF = ['drop trigger refuse_rotation_audit on audit_outbox', 'drop function refuse_rotation_audit()'];

for (const { set, skip } of engineSets) describe(`credentials: a rotation succeeds when its audit write fails (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let daemon: Daemon;
  const open: SseClient[] = [];

  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    daemon = await registerDaemon(t, acme);
  });
  after(async () => {
    for (const c of open.splice(0)) c.close();
    await t?.close();
  });

  const rotate = () => t.call('POST', '/api/daemon/credentials/rotate', { token: acme.ownerToken, body: { orgId: acme.orgId, kind: 'github-token' } });
  const rotationAudits = async () => (await t.call('GET', '/api/audit?limit=50', { token: acme.ownerToken })).json.entries
    .filter((e: { type: string }) => e.type === 'credential.rotated');

  it('answers 200 and pushes the value while the audit store refuses the entry, and audits again once it accepts', async () => {
    const put = await t.call('PUT', `/api/org/${acme.orgId}/credentials/github-token`, { token: acme.ownerToken, body: { provider: 'static', value: 'ghp_during_fault' } });
    expect(put.status, put.text).to.equal(200);
    const stream = await openSse(`${t.url}/api/daemon/credentials/stream`, { token: daemon.runtimeJwt });
    open.push(stream);
    await stream.next((f) => f.event === 'ready');

    for (const statement of FAULT_ON) await t.node.deps.db.raw(statement);
    let during;
    try {
      during = await rotate();
      // The fault really bites: an audit entry of this type cannot be written while it is on.
      const direct = await t.node.deps.services.audit.record({ orgId: acme.orgId, type: 'credential.rotated', actor: 'probe', at: new Date() }).then(() => 'written', () => 'refused');
      expect(direct).to.equal('refused');
    } finally {
      for (const statement of FAULT_OFF) await t.node.deps.db.raw(statement);
    }
    expect(during.status, during.text).to.equal(200);
    expect(during.json).to.include({ ok: true, kind: 'github-token', sessionCount: 1 });
    const pushed = await stream.next((f) => f.event === 'credential.rotated');
    expect(pushed.data).to.deep.equal({ kind: 'github-token', value: 'ghp_during_fault', rotatedAt: during.json.rotatedAt });
    expect(await rotationAudits(), 'the refused entry is not in the chain').to.deep.equal([]);

    const after = await rotate();
    expect(after.status, after.text).to.equal(200);
    await eventually(async () => (await rotationAudits()).length === 1, 'the next rotation audited');
    expect((await rotationAudits())[0].payload).to.include({ kind: 'github-token', rotatedAt: after.json.rotatedAt });
  });
});
