// Invariant (issue 36, decision 0085): a webhook trigger may set `priority` (0–9): the sessions its runs dispatch from
// agent nodes that set none take it; a node's own priority wins; a run of the same workflow started by hand keeps the
// default 5; a trigger priority out of 0..9 is refused at publish.
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { deliverySettled } from '../integrations/delivery-fixtures.js';
import { githubIssueOpened } from '../../support/provider-payloads.js';
import { webhookRunId } from '../../../actors/services/integrations/webhooks/workflow-triggers.js';

const definition = (repo: string, triggerPriority: string, nodePriority = '') => `schemaVersion: v2
name: on-issue
trigger: {type: webhook, provider: github, event: issues.opened, filter: {repository.full_name: "${repo}"}${triggerPriority}}
nodes:
  - {id: first, kind: agent, prompt: "Triage it"${nodePriority}}
edges: []
`;

for (const { set, skip } of engineSets) describe(`webhook trigger priority (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  const secret = randomBytes(20).toString('hex');
  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    const put = await t.inject('PUT', `/api/org/${org.orgId}/integrations/github`, { token: org.ownerToken, body: { signingSecret: secret } });
    expect(put.status, put.text).to.equal(200);
  });
  after(async () => { await t?.close(); });

  const api = (method: string, path: string, body?: unknown) => t.inject(method, path, { token: org.ownerToken, ...(body === undefined ? {} : { body }) });
  const create = async (yaml: string) => api('POST', `/api/projects/${org.projectId}/workflows`, { name: `on-issue-${randomUUID().slice(0, 8)}`, definitionYaml: yaml });
  const deliver = async (repo: string) => {
    const body = JSON.stringify(githubIssueOpened({ repo, number: 7, title: 'Checkout breaks' }));
    return t.inject('POST', `/api/webhooks/ingest/github?org=${org.orgId}`, {
      rawBody: body,
      headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': await octokitSign(secret, body) },
    });
  };
  /** The priority of the session the run's step `nodeId` dispatched, once it has. */
  const priorityOf = async (runId: string, nodeId: string): Promise<number> => {
    let sessionId: string | undefined;
    await eventually(async () => {
      sessionId = (await api('GET', `/api/workflow-runs/${runId}`)).json?.steps?.find((s: { nodeId: string }) => s.nodeId === nodeId)?.sessionId;
      return sessionId !== undefined && (await t.inject('GET', `/api/public/sessions/${sessionId}`, { token: org.apiKey })).status === 200;
    }, `the ${nodeId} step dispatched`);
    return (await t.inject('GET', `/api/public/sessions/${sessionId}`, { token: org.apiKey })).json.priority as number;
  };
  const finish = async (runId: string, nodeId: string) => {
    const sessionId = (await api('GET', `/api/workflow-runs/${runId}`)).json.steps.find((s: { nodeId: string }) => s.nodeId === nodeId).sessionId as string;
    expect((await t.inject('POST', `/api/public/sessions/${sessionId}/stop`, { token: org.apiKey })).status).to.equal(200);
  };

  it("gives a webhook-started run's agent nodes the trigger's priority unless they set their own; a run started by hand keeps 5", async () => {
    const repo = `acme/api-${randomUUID().slice(0, 8)}`;
    const created = await create(definition(repo, ', priority: 8'));
    expect(created.status, created.text).to.equal(201);
    const id = created.json.id as string;
    expect((await api('PATCH', `/api/workflows/${id}`, { status: 'published' })).status).to.equal(200);

    const delivered = await deliver(repo);
    expect(delivered.status, delivered.text).to.equal(200);
    await deliverySettled(t, org.orgId, delivered.json.eventId);
    const runId = webhookRunId(delivered.json.eventId, id);
    expect(await priorityOf(runId, 'first'), 'the trigger\'s').to.equal(8);

    const manual = await api('POST', `/api/workflows/${id}/runs`, {});
    expect(manual.status, manual.text).to.equal(201);
    expect(await priorityOf(manual.json.runId, 'first'), 'a run by hand').to.equal(5);
    await finish(manual.json.runId, 'first');
    await finish(runId, 'first');

    // A node that sets its own priority keeps it in a webhook-started run.
    const ownRepo = `acme/own-${randomUUID().slice(0, 8)}`;
    const own = await create(definition(ownRepo, ', priority: 8', ', priority: 3'));
    expect((await api('PATCH', `/api/workflows/${own.json.id}`, { status: 'published' })).status).to.equal(200);
    const ownDelivery = await deliver(ownRepo);
    await deliverySettled(t, org.orgId, ownDelivery.json.eventId);
    const ownRun = webhookRunId(ownDelivery.json.eventId, own.json.id);
    expect(await priorityOf(ownRun, 'first'), "the node's own").to.equal(3);
    await finish(ownRun, 'first');
  });

  it('refuses a trigger priority outside 0..9', async () => {
    for (const bad of [', priority: 10', ', priority: -1', ', priority: high']) {
      const created = await create(definition(`acme/x-${randomUUID().slice(0, 8)}`, bad));
      expect([created.status, created.json.code], bad).to.deep.equal([400, 'VALIDATION_FAILED']);
    }
  });
});
