// Invariant: a verified provider delivery whose event matches a published workflow's webhook trigger (and its filter)
// starts exactly one run of the published version with the delivery's payload as input, instead of the built-in
// routing; a duplicate delivery starts nothing; a delivery another org signed, one that fails the filter, and one
// for an archived workflow start no run of this workflow; a delivery recorded but not finished before a crash (its
// hand-off lost, or its run start lost after the event's snapshot) starts its run once when the node's sweeper
// re-sends it.
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { deliverySettled } from '../integrations/delivery-fixtures.js';
import { githubIssueOpened } from '../../support/provider-payloads.js';
import { findWebhookEvent } from '../../../storage/integrations/webhook-events.js';
import { providerEventAddress } from '../../../actors/services/integrations/webhooks/actor.js';
import { initialProviderEventState, type ProviderEventMsg } from '../../../actors/services/integrations/webhooks/machine.js';
import { webhookRunId } from '../../../actors/services/integrations/webhooks/workflow-triggers.js';

const triggered = (name: string, repo: string) => `schemaVersion: v2
name: ${name}
trigger: {type: webhook, provider: github, event: issues.opened, filter: {repository.full_name: "${repo}"}}
nodes:
  - {id: triage, kind: approval, title: "Triage the new issue?"}
edges: []
`;

for (const { set, skip } of engineSets) describe(`workflows: webhook triggers (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;
  const secret = randomBytes(20).toString('hex');
  const otherSecret = randomBytes(20).toString('hex');

  before(async () => {
    t = await startTestNode({ engines: set, config: { webhookResendAfterMs: 1000 } });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
    for (const [o, signingSecret] of [[org, secret], [other, otherSecret]] as const) {
      const put = await t.inject('PUT', `/api/org/${o.orgId}/integrations/github`, { token: o.ownerToken, body: { signingSecret } });
      expect(put.status, put.text).to.equal(200);
    }
  });
  after(async () => { await t?.close(); });

  const api = (method: string, path: string, body?: unknown, token = org.ownerToken) => t.inject(method, path, { token, ...(body === undefined ? {} : { body }) });
  async function publishedWorkflow(yaml: string): Promise<string> {
    const created = await api('POST', `/api/projects/${org.projectId}/workflows`, { name: 'on-issue', definitionYaml: yaml });
    expect(created.status, created.text).to.equal(201);
    expect((await api('PATCH', `/api/workflows/${created.json.id}`, { status: 'published' })).status).to.equal(200);
    return created.json.id as string;
  }
  const runsOf = async (id: string) => (await api('GET', `/api/workflows/${id}/runs`)).json.runs as Array<Record<string, any>>;
  const delivery = (repo: string) => ({ body: JSON.stringify(githubIssueOpened({ repo, number: 5, title: 'Login fails' })), id: randomUUID() });
  const deliver = async (d: { body: string; id: string }, signingSecret = secret) => t.inject('POST', `/api/webhooks/ingest/github?org=${signingSecret === secret ? org.orgId : other.orgId}`, {
    rawBody: d.body,
    headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': d.id, 'x-hub-signature-256': await octokitSign(signingSecret, d.body) },
  });

  it('a matching issues.opened delivery starts exactly one run with its payload; its duplicate starts none', async () => {
    const repo = `acme/api-${randomUUID().slice(0, 8)}`;
    const id = await publishedWorkflow(triggered('on-issue', repo));
    const d = delivery(repo);
    const first = await deliver(d);
    expect(first.status, first.text).to.equal(200);
    expect(first.json).to.include({ ok: true, duplicate: false });
    await deliverySettled(t, org.orgId, first.json.eventId);
    const event = await findWebhookEvent(t.node.deps.db, org.orgId, first.json.eventId);
    expect(event).to.include({ status: 'routed', sessionId: null });
    const runId = webhookRunId(first.json.eventId, id);
    expect(event!.outcome).to.deep.equal({ runIds: [runId] });

    const runs = await runsOf(id);
    expect(runs).to.have.length(1);
    expect(runs[0]).to.include({ runId, trigger: 'webhook', eventId: first.json.eventId, version: 2, fireTime: null, startedBy: 'webhook:github' });
    expect(runs[0]!.input).to.deep.equal(JSON.parse(d.body));
    await eventually(async () => (await api('GET', `/api/workflow-runs/${runId}`)).json?.status === 'suspended', 'the run reached its approval');
    // The workflow took the event over: no ad-hoc session was dispatched for the issue.
    expect((await api('GET', `/api/sessions?trackerIssue=${encodeURIComponent(`${repo}#5`)}`, undefined, org.apiKey)).json.sessions).to.deep.equal([]);

    const again = await deliver(d);
    expect(again.json).to.deep.equal({ ...first.json, duplicate: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await runsOf(id)).to.have.length(1);
  });

  it("starts nothing for a filter mismatch, another org's delivery, or an archived workflow", async () => {
    const repo = `acme/web-${randomUUID().slice(0, 8)}`;
    const id = await publishedWorkflow(triggered('on-web-issue', repo));
    const elsewhere = await deliver(delivery(`acme/else-${randomUUID().slice(0, 8)}`));
    await deliverySettled(t, org.orgId, elsewhere.json.eventId);
    // Not this workflow's repository: the built-in routing handles it (a session), no run.
    const handled = await findWebhookEvent(t.node.deps.db, org.orgId, elsewhere.json.eventId);
    expect(handled).to.include({ status: 'routed' });
    expect(handled!.sessionId).to.match(/^[0-9a-f]{16}$/);
    const theirs = await deliver(delivery(repo), otherSecret);
    expect(theirs.status, theirs.text).to.equal(200);
    await deliverySettled(t, other.orgId, theirs.json.eventId);
    expect(await runsOf(id)).to.deep.equal([]);

    expect((await api('PATCH', `/api/workflows/${id}`, { status: 'archived' })).status).to.equal(200);
    const late = await deliver(delivery(repo));
    await deliverySettled(t, org.orgId, late.json.eventId);
    expect(await runsOf(id)).to.deep.equal([]);
    expect((await api('GET', `/api/workflows/${id}/runs`, undefined, other.ownerToken)).status).to.equal(404);
  });

  it('a delivery whose hand-off or run start was lost in a crash starts its run once, through the sweeper', async () => {
    const repo = `acme/ops-${randomUUID().slice(0, 8)}`;
    const id = await publishedWorkflow(triggered('on-ops-issue', repo));
    const payload = githubIssueOpened({ repo });
    const message: ProviderEventMsg = {
      type: 'providerEvent.route', orgId: org.orgId, provider: 'github', eventType: 'issues.opened', projectId: org.projectId,
      action: { kind: 'startRuns', runs: [{ workflowId: id, projectId: org.projectId, version: 2 }], input: payload },
    };
    const record = async () => {
      const eventId = randomUUID();
      await t.node.deps.db('provider_webhook_events').insert({
        id: eventId, org_id: org.orgId, provider: 'github', delivery_id: randomUUID(), event_type: 'issues.opened', correlation_id: randomUUID(),
        status: 'received', received_at: new Date(Date.now() - 10_000), route_message: JSON.stringify(message),
      });
      return eventId;
    };
    // Recorded and answered 200, then the node died before the hand-off.
    const lostHandOff = await record();
    // Handed off and `routing` persisted, then the node died before the run start.
    const lostStart = await record();
    await t.node.deps.snapshots.save(providerEventAddress(lostStart), 0, {
      ...initialProviderEventState(), status: 'routing', orgId: org.orgId, provider: 'github', eventType: 'issues.opened', updatedAt: Date.now() - 10_000,
    });
    for (const eventId of [lostHandOff, lostStart]) {
      await eventually(async () => (await findWebhookEvent(t.node.deps.db, org.orgId, eventId))?.status === 'routed', `delivery ${eventId} finished`, 20_000);
    }
    const runs = await runsOf(id);
    expect(runs.map((r) => r.runId).sort()).to.deep.equal([webhookRunId(lostHandOff, id), webhookRunId(lostStart, id)].sort());
    for (const run of runs) expect(run).to.include({ trigger: 'webhook', version: 2 });
  });
});
