// Invariant: a failed CircleCI job reaches the Troupe session its pipeline's branch names (`troupe/<sessionId>`)
// as one activity on the session detail — once per CircleCI delivery, however often the delivery is re-sent or
// re-routed — and only when the session belongs to the org whose secret signed the delivery: another org's
// session is never touched. Successful jobs, branches naming no session and bad signatures attach nothing.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { deliverySettled, dispatchSession, sessionActivities } from './delivery-fixtures.js';
import { provision, type Org } from '../agents/fixtures.js';
import { providerEventAddress } from '../../../actors/services/integrations/webhooks/actor.js';
import { findWebhookEvent } from '../../../storage/integrations/webhook-events.js';
import { sessionKeyOf } from '../../support/session-keys.js';

/** CircleCI's scheme, computed here from its documentation: `circleci-signature: v1=<hex HMAC-SHA256(secret, body)>`. */
const circleciSignature = (secret: string, body: string) => `v1=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** A job-completed delivery shaped like CircleCI's documented sample (GitHub OAuth project). */
function jobCompleted(opts: { branch: string; status: string; gitlab?: boolean }): { id: string; body: string } {
  const id = randomUUID();
  const pipeline: Record<string, unknown> = {
    id: randomUUID(), number: 130, created_at: '2025-01-01T10:00:00.000Z', trigger: { type: 'webhook' },
  };
  if (opts.gitlab) pipeline.trigger_parameters = { git: { branch: opts.branch, checkout_sha: 'a'.repeat(40) }, circleci: { event_type: 'push' } };
  else pipeline.vcs = { provider_name: 'github', revision: 'b'.repeat(40), branch: opts.branch, commit: { subject: 'fix' } };
  return {
    id,
    body: JSON.stringify({
      type: 'job-completed', id, happened_at: '2025-01-01T10:05:00.000Z',
      webhook: { id: randomUUID(), name: 'troupe' },
      project: { id: randomUUID(), name: 'app', slug: 'gh/acme/app' },
      organization: { id: randomUUID(), name: 'acme' },
      workflow: { id: randomUUID(), name: 'build', status: opts.status, url: 'https://app.circleci.com/pipelines/github/acme/app/130/workflows/w1' },
      pipeline,
      job: { id: randomUUID(), name: 'test', number: 4, status: opts.status, started_at: '2025-01-01T10:01:00.000Z', stopped_at: '2025-01-01T10:05:00.000Z' },
    }),
  };
}

for (const { set, skip } of engineSets) describe(`integrations: CircleCI job failures on their session (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: Org;
  let other: Org;
  const secret = randomBytes(20).toString('hex');

  const deliver = (body: string, signature = circleciSignature(secret, body)) => t.inject('POST', `/api/webhooks/ingest/circleci?org=${org.orgId}`, {
    rawBody: body, headers: { 'content-type': 'application/json', 'circleci-signature': signature, 'circleci-event-type': 'job-completed' },
  });
  const ciActivities = (o: Org, sessionId: string) => sessionActivities(t, o, sessionId, 'ci.job_failed');

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provision(t);
    other = await provision(t);
    const put = await t.inject('PUT', `/api/org/${org.orgId}/integrations/circleci`, { token: org.ownerToken, body: { signingSecret: secret } });
    expect(put.status, put.text).to.equal(200);
  });
  after(async () => { await t?.close(); });

  it('a failed job on troupe/<sessionId> appears once in the session detail, also when re-sent or re-routed', async () => {
    const sessionId = await dispatchSession(t, org);
    const delivery = jobCompleted({ branch: `troupe/${sessionId}`, status: 'failed' });
    const first = await deliver(delivery.body);
    expect(first.status, first.text).to.equal(200);
    expect(first.json.duplicate).to.equal(false);
    await eventually(async () => (await ciActivities(org, sessionId)).length === 1, 'CI failure on the session');
    const [activity] = await ciActivities(org, sessionId);
    expect(activity!.body).to.equal('CircleCI job test #4 failed in gh/acme/app: https://app.circleci.com/pipelines/github/acme/app/130/workflows/w1');
    const row = await findWebhookEvent(t.node.deps.db, org.orgId, first.json.eventId);
    expect(row).to.include({ status: 'routed', sessionId, deliveryId: delivery.id });

    // CircleCI re-sends the same delivery: a duplicate, routed no further.
    const again = await deliver(delivery.body);
    expect(again.json).to.include({ duplicate: true, eventId: first.json.eventId });
    // The route message is handed to the actor again (a broker redelivery, the sweeper): still one activity.
    const stored = await t.node.deps.db('provider_webhook_events').where({ id: first.json.eventId }).first('route_message');
    const message = typeof stored.route_message === 'string' ? JSON.parse(stored.route_message) : stored.route_message;
    await t.node.deps.ask(providerEventAddress(first.json.eventId), message);
    expect(await ciActivities(org, sessionId)).to.have.length(1);

    // A second failing job is its own delivery and its own activity.
    const second = await deliver(jobCompleted({ branch: `troupe/${sessionId}/retry`, status: 'infrastructure_fail' }).body);
    expect(second.status, second.text).to.equal(200);
    await eventually(async () => (await ciActivities(org, sessionId)).length === 2, 'second CI failure');
  });

  it('GitLab and GitHub App projects name the branch in trigger_parameters.git', async () => {
    const sessionId = await dispatchSession(t, org);
    const r = await deliver(jobCompleted({ branch: `troupe/${sessionId}`, status: 'timedout', gitlab: true }).body);
    expect(r.status, r.text).to.equal(200);
    await eventually(async () => (await ciActivities(org, sessionId)).length === 1, 'CI failure from a GitLab pipeline');
  });

  it("a branch naming another org's session touches nothing there", async () => {
    const theirs = await dispatchSession(t, other);
    const before = await sessionActivities(t, other, theirs);
    const r = await deliver(jobCompleted({ branch: `troupe/${theirs}`, status: 'failed' }).body);
    expect(r.status, r.text).to.equal(200);
    await deliverySettled(t, org.orgId, r.json.eventId);
    const row = await findWebhookEvent(t.node.deps.db, org.orgId, r.json.eventId);
    expect(row?.status).to.equal('ignored');
    expect(row?.sessionId ?? null).to.equal(null);
    expect(await sessionActivities(t, other, theirs)).to.deep.equal(before);
    expect(await t.node.deps.db('session_activities').where({ session_id: await sessionKeyOf(t.node.deps.db, other.orgId, theirs), kind: 'ci.job_failed' }).count({ n: '*' })).to.deep.equal([{ n: 0 }]);
  });

  it('successful jobs, branches naming no session and bad signatures attach nothing', async () => {
    const sessionId = await dispatchSession(t, org);
    const success = await deliver(jobCompleted({ branch: `troupe/${sessionId}`, status: 'success' }).body);
    const plain = await deliver(jobCompleted({ branch: 'main', status: 'failed' }).body);
    for (const r of [success, plain]) {
      expect(r.status, r.text).to.equal(200);
      await deliverySettled(t, org.orgId, r.json.eventId);
      expect((await findWebhookEvent(t.node.deps.db, org.orgId, r.json.eventId))?.status).to.equal('ignored');
    }
    const forged = jobCompleted({ branch: `troupe/${sessionId}`, status: 'failed' });
    const refused = await deliver(forged.body, circleciSignature(randomBytes(20).toString('hex'), forged.body));
    expect(refused.status).to.equal(401);
    expect(await t.node.deps.db('provider_webhook_events').where({ delivery_id: forged.id }).count({ n: '*' })).to.deep.equal([{ n: 0 }]);
    expect(await ciActivities(org, sessionId)).to.deep.equal([]);
  });
});
