// Invariant (issue 30, item 5): published triggers are bounded by operator settings. A cron firing more often than
// TROUPE_SCHEDULE_MIN_INTERVAL_SECONDS is refused with 400 when published (a draft may hold it); an org at
// TROUPE_SCHEDULES_PER_ORG schedules, or at TROUPE_WEBHOOK_WORKFLOWS_PER_ORG webhook-triggered workflows, gets 409
// naming the limit for one more; a rollback meets the same checks; republishing works, and another org is not
// affected. A refused publish changes nothing. Runs started by schedules and webhook triggers count against the org's
// dispatch budget: past it a fire is recorded as failed and a delivery as ignored, each naming the limit.
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { githubIssueOpened } from '../../support/provider-payloads.js';
import { deliverySettled } from '../integrations/delivery-fixtures.js';
import { findWebhookEvent } from '../../../storage/integrations/webhook-events.js';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';

const scheduled = (name: string, cron: string) => `schemaVersion: v2
name: ${name}
trigger: {type: schedule, cron: "${cron}"}
nodes:
  - {id: gate, kind: approval, title: "Go?"}
edges: []
`;

for (const { set, skip } of engineSets) describe(`workflows: schedule limits (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;

  before(async () => {
    t = await startTestNode({ engines: set, config: { schedulesPerOrg: 2, scheduleMinIntervalSeconds: 10, webhookWorkflowsPerOrg: 1 } });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  const api = (o: ProvisionedOrg, method: string, path: string, body?: unknown) =>
    t.inject(method, path, { token: o.ownerToken, ...(body === undefined ? {} : { body }) });
  async function draft(o: ProvisionedOrg, name: string, cron: string): Promise<string> {
    const created = await api(o, 'POST', `/api/projects/${o.projectId}/workflows`, { name, definitionYaml: scheduled(name, cron) });
    expect(created.status, created.text).to.equal(201);
    return created.json.id as string;
  }
  const publish = (o: ProvisionedOrg, id: string) => api(o, 'PATCH', `/api/workflows/${id}`, { status: 'published' });

  it('refuses to publish a schedule firing more often than the minimum interval, and keeps the draft as it was', async () => {
    const id = await draft(org, 'every-second', '* * * * * *');
    const refused = await publish(org, id);
    expect(refused.status, refused.text).to.equal(400);
    expect(refused.json).to.include({ code: 'VALIDATION_FAILED' });
    expect(refused.json.error).to.match(/fires every 1 s.*TROUPE_SCHEDULE_MIN_INTERVAL_SECONDS/);
    const after = await api(org, 'GET', `/api/workflows/${id}`);
    expect(after.json).to.include({ status: 'draft', version: 1, publishedVersion: null });
  });

  it('refuses one published schedule past the org limit with 409; rollbacks are checked too; republishing works', async () => {
    const first = await draft(org, 'hourly', '0 * * * *');
    const second = await draft(org, 'daily', '0 9 * * *');
    expect((await publish(org, first)).status).to.equal(200);
    expect((await publish(org, second)).status).to.equal(200);
    const third = await draft(org, 'weekly', '0 9 * * 1');
    const refused = await publish(org, third);
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.json).to.include({ code: 'CONFLICT' });
    expect(refused.json.error).to.match(/already has 2 published schedules.*TROUPE_SCHEDULES_PER_ORG/);
    expect((await api(org, 'GET', `/api/workflows/${third}`)).json).to.include({ status: 'draft', version: 1 });

    // A new version of a published schedule is not one more schedule.
    const edited = await api(org, 'PATCH', `/api/workflows/${first}`, { definitionYaml: scheduled('hourly', '30 * * * *') });
    expect(edited.status, edited.text).to.equal(200);
    expect(edited.json).to.include({ status: 'published', version: 3 });

    // A published schedule rolled back to a version firing too often is refused like an edit.
    const tooFast = await api(org, 'PATCH', `/api/workflows/${first}`, { definitionYaml: scheduled('hourly', '*/2 * * * * *'), status: 'draft' });
    expect(tooFast.status, tooFast.text).to.equal(200);
    expect((await api(org, 'PATCH', `/api/workflows/${first}`, { definitionYaml: scheduled('hourly', '0 * * * *'), status: 'published' })).status).to.equal(200);
    const rolledBack = await api(org, 'POST', `/api/workflows/${first}/versions/4/rollback`);
    expect(rolledBack.status, rolledBack.text).to.equal(400);

    // Unpublishing frees a place.
    expect((await api(org, 'PATCH', `/api/workflows/${second}`, { status: 'draft' })).status).to.equal(200);
    expect((await publish(org, third)).status).to.equal(200);
  });

  it('refuses one published webhook-triggered workflow past the org limit with 409', async () => {
    const hooked = (name: string) => `schemaVersion: v2
name: ${name}
trigger: {type: webhook, provider: github, event: issues}
nodes:
  - {id: gate, kind: approval, title: "Go?"}
edges: []
`;
    const created = async (name: string) => (await api(org, 'POST', `/api/projects/${org.projectId}/workflows`, { name, definitionYaml: hooked(name) })).json.id as string;
    const first = await created('on-issue');
    expect((await publish(org, first)).status).to.equal(200);
    const second = await created('on-issue-too');
    const refused = await publish(org, second);
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.json.error).to.match(/already has 1 published webhook-triggered workflows.*TROUPE_WEBHOOK_WORKFLOWS_PER_ORG/);
    expect((await api(org, 'PATCH', `/api/workflows/${first}`, { definitionYaml: hooked('on-issue') })).status, 'republishing').to.equal(200);
  });

  it("leaves another org's schedules alone", async () => {
    const id = await draft(other, 'theirs', '0 * * * *');
    expect((await publish(other, id)).status).to.equal(200);
  });
});

for (const { set, skip } of engineSets) describe(`workflows: triggered starts count against the org's dispatch budget (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let org: ProvisionedOrg;

  before(async () => {
    t = await startTestNode({ engines: set, config: { scheduleMinIntervalSeconds: 1, rateLimitDispatchesPerMinute: 2 } });
    org = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  it('records the fires past the budget as failed with the limit named, starting no run for them', async () => {
    const yaml = `schemaVersion: v2
name: every-second
trigger: {type: schedule, cron: "* * * * * *", overlap: allow}
nodes:
  - {id: gate, kind: approval, title: "Go?"}
edges: []
`;
    const created = await t.inject('POST', `/api/projects/${org.projectId}/workflows`, { token: org.ownerToken, body: { name: 'every-second', definitionYaml: yaml } });
    expect(created.status, created.text).to.equal(201);
    const id = created.json.id as string;
    expect((await t.inject('PATCH', `/api/workflows/${id}`, { token: org.ownerToken, body: { status: 'published' } })).status).to.equal(200);
    let schedule: any;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      schedule = (await t.inject('GET', `/api/workflows/${id}/schedule`, { token: org.ownerToken })).json;
      if (JSON.stringify(schedule).includes('TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE')) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(JSON.stringify(schedule), 'a fire refused for the budget, with the reason').to.include('TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE');
    await t.inject('PATCH', `/api/workflows/${id}`, { token: org.ownerToken, body: { status: 'draft' } });
    const runs = (await t.inject('GET', `/api/workflows/${id}/runs`, { token: org.ownerToken })).json.runs as unknown[];
    expect(runs.length, 'runs started within the budget of 2 a minute').to.equal(2);
  });

  it('ignores a webhook delivery whose runs would pass the budget, saying why', async () => {
    const hooked = await provisionOrg(t);
    const secret = randomBytes(20).toString('hex');
    expect((await t.inject('PUT', `/api/org/${hooked.orgId}/integrations/github`, { token: hooked.ownerToken, body: { signingSecret: secret } })).status).to.equal(200);
    const yaml = `schemaVersion: v2
name: on-issue
trigger: {type: webhook, provider: github, event: issues}
nodes:
  - {id: gate, kind: approval, title: "Go?"}
edges: []
`;
    const created = await t.inject('POST', `/api/projects/${hooked.projectId}/workflows`, { token: hooked.ownerToken, body: { name: 'on-issue', definitionYaml: yaml } });
    expect((await t.inject('PATCH', `/api/workflows/${created.json.id}`, { token: hooked.ownerToken, body: { status: 'published' } })).status).to.equal(200);
    const outcomes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const body = JSON.stringify(githubIssueOpened({ repo: 'acme/api', number: i + 1, title: `Issue ${i}` }));
      const res = await t.inject('POST', `/api/webhooks/ingest/github?org=${hooked.orgId}`, {
        rawBody: body,
        headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': await octokitSign(secret, body) },
      });
      expect(res.status, res.text).to.equal(200);
      await deliverySettled(t, hooked.orgId, res.json.eventId);
      const event = await findWebhookEvent(t.node.deps.db, hooked.orgId, res.json.eventId);
      outcomes.push(`${event?.status} ${String(event?.outcome.detail ?? '')}`);
    }
    expect(outcomes.slice(0, 2)).to.deep.equal(['routed ', 'routed ']);
    expect(outcomes[2]).to.match(/^ignored .*TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE/);
  });
});
