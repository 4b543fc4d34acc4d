// Invariant (issue 30, item 5): published schedules are bounded by operator settings. A cron firing more often than
// TROUPE_SCHEDULE_MIN_INTERVAL_SECONDS is refused with 400 when published (a draft may hold it), and an org at
// TROUPE_SCHEDULES_PER_ORG gets 409 naming the limit for one more; a rollback meets the same checks; republishing a
// scheduled workflow still works, and another org is not affected. A refused publish changes nothing.
import { expect } from 'chai';
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
    t = await startTestNode({ engines: set, config: { schedulesPerOrg: 2, scheduleMinIntervalSeconds: 10 } });
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

  it("leaves another org's schedules alone", async () => {
    const id = await draft(other, 'theirs', '0 * * * *');
    expect((await publish(other, id)).status).to.equal(200);
  });
});
