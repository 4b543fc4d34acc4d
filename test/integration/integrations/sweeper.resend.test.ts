// Invariant: a provider delivery that was recorded but never finished is finished later, exactly once: when its
// hand-off to the provider-event actor was lost, and when the actor persisted `routing` but lost its dispatch, the
// node's sweeper hands it on again after TROUPE_WEBHOOK_RESEND_AFTER_MS and the Linear issue gets its one
// session; a delivery that already has an outcome is left alone.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { planRoute } from '../../../actors/services/integrations/webhooks/routing.js';
import { providerEventAddress } from '../../../actors/services/integrations/webhooks/actor.js';
import { initialProviderEventState, type ProviderEventMsg } from '../../../actors/services/integrations/webhooks/machine.js';
import { publicSessionId, sessionKey } from '../../../actors/kinds/session/index.js';

for (const { set, skip } of engineSets) describe(`integrations: the webhook sweeper re-sends stuck deliveries (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;

  before(async () => {
    t = await startTestNode({ engines: set, config: { webhookResendAfterMs: 1000 } });
    org = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  /** A Linear issue delivery as the ingest records it, received `ageMs` ago, with the message it was handed on with. */
  async function recordedDelivery(ageMs: number, status = 'received') {
    const id = randomUUID();
    const issueId = randomUUID();
    const message: ProviderEventMsg = {
      type: 'providerEvent.route', orgId: org.orgId, provider: 'linear', eventType: 'Issue.create', projectId: org.projectId,
      action: planRoute(org.orgId, 'linear', 'Issue.create', { type: 'Issue', action: 'create', data: { id: issueId, identifier: 'ENG-7', title: 'Flaky login' } }),
    };
    await t.node.deps.db('provider_webhook_events').insert({
      id, org_id: org.orgId, provider: 'linear', delivery_id: randomUUID(), event_type: 'Issue.create', correlation_id: randomUUID(),
      status, received_at: new Date(Date.now() - ageMs), route_message: JSON.stringify(message),
    });
    const trackerSessionId = `linear:${org.orgId}:${issueId}`;
    // The delivery records the public id; the session's rows are under its key (decision 0068).
    return { id, message, sessionId: publicSessionId(trackerSessionId), key: sessionKey(org.orgId, trackerSessionId) };
  }
  const row = (id: string) => t.node.deps.db('provider_webhook_events').where({ id }).first();
  const sessionsOf = (sessionId: string) => t.node.deps.db('sessions').where({ id: sessionId }).select('id', 'status', 'requested_by');

  it('a delivery whose hand-off was lost is routed and dispatches its session once', async () => {
    const d = await recordedDelivery(10_000);
    await eventually(async () => (await row(d.id))?.status === 'routed', 'stuck delivery routed');
    const routed = await row(d.id);
    expect(routed.session_id).to.equal(d.sessionId);
    expect(routed.resend_count).to.equal(1);
    expect(await sessionsOf(d.key)).to.deep.equal([{ id: d.key, status: 'pending', requested_by: 'webhook:linear' }]);
  });

  it('a delivery stuck in routing (dispatch lost after the snapshot) is dispatched and recorded routed', async () => {
    const d = await recordedDelivery(10_000);
    // The actor's own durable state says `routing`, as after a crash between its snapshot and its dispatch effect.
    await t.node.deps.snapshots.save(providerEventAddress(d.id), 0, {
      ...initialProviderEventState(), status: 'routing', orgId: org.orgId, provider: 'linear', eventType: 'Issue.create', updatedAt: Date.now() - 10_000,
    });
    expect(await sessionsOf(d.key)).to.deep.equal([]);
    await eventually(async () => (await row(d.id))?.status === 'routed', 'routing delivery finished');
    expect((await row(d.id)).session_id).to.equal(d.sessionId);
    expect(await sessionsOf(d.key)).to.have.length(1);
  });

  it('leaves fresh deliveries and finished ones alone', async () => {
    const finished = await recordedDelivery(10_000, 'ignored');
    const fresh = await recordedDelivery(-60_000);
    const probe = await recordedDelivery(10_000);
    // Once a later stuck delivery has been handled, the sweeper has passed over the other two.
    await eventually(async () => (await row(probe.id))?.status === 'routed', 'probe delivery routed');
    expect(await row(finished.id)).to.include({ status: 'ignored', resend_count: 0 });
    expect(await row(fresh.id)).to.include({ status: 'received', resend_count: 0 });
    expect(await sessionsOf(fresh.key)).to.deep.equal([]);
  });
});
