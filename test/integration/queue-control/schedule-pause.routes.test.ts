// Invariant: a paused schedule starts no run: each fire that comes due while paused is listed `skipped-paused` in
// `GET /api/workflows/{id}/schedule` (which shows `paused`), with no run; resuming starts runs again only for fires after
// the resume, never for those passed over. Pause and resume are idempotent and audited once per change, allowed to who
// may publish the workflow (owners, org admins, project admins, admin keys), refused (403) to members, viewers, project
// editors and read keys, 404 for another org's workflow or an id naming none, and 409 for a workflow without a schedule.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, type Org } from '../sessions/support.js';
import { auditOf, expectRefused, people, type People } from './support.js';

const definition = (name: string, trigger: string) =>
  `schemaVersion: v2\nname: ${name}\ntrigger: ${trigger}\nnodes:\n  - {id: done, kind: wait, seconds: 0}\nedges: []\n`;
const everySecond = '{type: schedule, cron: "* * * * * *", overlap: allow}';

interface Fire { fireTime: string; outcome: string; runId: string | null; detail: string | null }

for (const { set, skip } of engineSets) describe(`workflow schedule pause and resume (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let who: People;
  before(async () => {
    t = await startTestNode({ engines: set, config: { scheduleScanMs: 500 } });
    [acme, globex] = await Promise.all([provisionOrg(t, 'Acme'), provisionOrg(t, 'Globex')]);
    who = await people(t, acme);
  });
  after(async () => { await t?.close(); });

  async function publishedWorkflow(org: Org, name: string, trigger = everySecond): Promise<string> {
    const created = await t.call('POST', `/api/projects/${org.projectId}/workflows`, { token: org.ownerToken, body: { name, definitionYaml: definition(name, trigger) } });
    expect(created.status, created.text).to.equal(201);
    const published = await t.call('PATCH', `/api/workflows/${created.json.id}`, { token: org.ownerToken, body: { status: 'published' } });
    expect(published.status, published.text).to.equal(200);
    return created.json.id as string;
  }
  const control = (id: string, action: 'pause' | 'resume', token = acme.ownerToken) => t.call('POST', `/api/workflows/${encodeURIComponent(id)}/schedule/${action}`, { token });
  const scheduleOf = async (id: string, token = acme.ownerToken) => {
    const r = await t.call('GET', `/api/workflows/${id}/schedule`, { token });
    expect(r.status, r.text).to.equal(200);
    return r.json as { paused: boolean; pausedAt: string | null; pausedBy: string | null; status: string; lastFires: Fire[] };
  };
  const runFireTimes = async (id: string) => {
    const r = await t.call('GET', `/api/workflows/${id}/runs?limit=100`, { token: acme.ownerToken });
    expect(r.status, r.text).to.equal(200);
    return (r.json.runs as Array<{ fireTime: string | null }>).map((run) => Date.parse(run.fireTime!));
  };

  it('records fires skipped-paused and starts no run while paused; after the resume runs only later fires', async () => {
    const id = await publishedWorkflow(acme, 'every-second');
    await eventually(async () => (await runFireTimes(id)).length >= 1, 'a first scheduled run', 15_000);

    const paused = await control(id, 'pause');
    expect(paused.status, paused.text).to.equal(200);
    expect(paused.json).to.include({ workflowId: id, paused: true });
    expect(paused.json.pausedBy).to.match(/^user:/);
    const pausedAt = Date.parse(paused.json.pausedAt);
    expect(await scheduleOf(id, who.projectViewer)).to.include({ paused: true, pausedAt: paused.json.pausedAt, pausedBy: paused.json.pausedBy, status: 'active' });

    const skippedWhilePaused = async () => (await scheduleOf(id)).lastFires.filter((f) => f.outcome === 'skipped-paused');
    await eventually(async () => (await skippedWhilePaused()).length >= 3, 'three fires skipped while paused', 15_000);
    for (const fire of await skippedWhilePaused()) {
      expect(fire.runId).to.equal(null);
      expect(Date.parse(fire.fireTime)).to.be.above(pausedAt - 1_000);
      expect(fire.detail).to.contain(paused.json.pausedBy);
    }
    expect((await runFireTimes(id)).filter((at) => at > pausedAt), 'no run of a fire after the pause').to.deep.equal([]);

    const askedToResume = Date.now();
    const resumed = await control(id, 'resume');
    expect(resumed.json).to.deep.equal({ workflowId: id, paused: false, pausedAt: null, pausedBy: null });
    await eventually(async () => (await runFireTimes(id)).some((at) => at > askedToResume), 'a run after the resume', 15_000);
    const times = await runFireTimes(id);
    expect(times.filter((at) => at > pausedAt && at <= askedToResume), 'no fire passed over while paused is replayed').to.deep.equal([]);
    const schedule = await scheduleOf(id);
    expect(schedule.paused).to.equal(false);
    for (const fire of schedule.lastFires.filter((f) => f.outcome === 'skipped-paused')) expect(times).to.not.include(Date.parse(fire.fireTime));

    const entries = (await auditOf(t, acme, ['workflow.schedule_paused', 'workflow.schedule_resumed'])).filter((e) => e.subject === id);
    expect(entries.map((e) => [e.type, e.actor])).to.deep.equal([['workflow.schedule_paused', paused.json.pausedBy], ['workflow.schedule_resumed', paused.json.pausedBy]]);
    await t.call('PATCH', `/api/workflows/${id}`, { token: acme.ownerToken, body: { status: 'archived' } });
  });

  it('is idempotent and audits each change once; a republish keeps the pause', async () => {
    const id = await publishedWorkflow(acme, 'daily', '{type: schedule, cron: "0 9 * * *"}');
    const first = await control(id, 'pause');
    expect((await control(id, 'pause', acme.apiKey)).json).to.deep.equal(first.json);
    const renamed = await t.call('PATCH', `/api/workflows/${id}`, { token: acme.ownerToken, body: { name: 'daily, renamed' } });
    expect(renamed.json.publishedVersion, renamed.text).to.equal(3);
    expect((await scheduleOf(id)).paused, 'a republish keeps the pause').to.equal(true);
    expect((await control(id, 'resume')).json.paused).to.equal(false);
    expect((await control(id, 'resume', acme.apiKey)).json.paused).to.equal(false);
    const entries = (await auditOf(t, acme, ['workflow.schedule_paused', 'workflow.schedule_resumed'])).filter((e) => e.subject === id);
    expect(entries.map((e) => e.type)).to.deep.equal(['workflow.schedule_paused', 'workflow.schedule_resumed']);
  });

  it('is allowed to who may publish the workflow; refused to members, viewers, project editors and read keys', async () => {
    const id = await publishedWorkflow(acme, 'roles', '{type: schedule, cron: "0 9 * * *"}');
    const refused: Array<[string, string]> = [
      ['member', acme.memberToken], ['org viewer', who.orgViewer], ['project editor', who.projectEditor], ['project viewer', who.projectViewer], ['read key', who.readKey],
    ];
    for (const [what, token] of refused) {
      for (const action of ['pause', 'resume'] as const) expectRefused(await control(id, action, token), 403, 'AUTHZ_DENIED', `${what} ${action}`);
    }
    expect((await scheduleOf(id)).paused, 'nothing changed').to.equal(false);
    for (const [what, token] of [['org admin', who.orgAdmin], ['project admin', who.projectAdmin], ['admin key', acme.apiKey]] as const) {
      expect((await control(id, 'pause', token)).json.paused, what).to.equal(true);
      expect((await control(id, 'resume', token)).json.paused, what).to.equal(false);
    }
  });

  it("is 404 for another org's workflow and ids naming none, 409 without a schedule, and changes nothing", async () => {
    const theirs = await publishedWorkflow(globex, 'theirs', '{type: schedule, cron: "0 9 * * *"}');
    for (const action of ['pause', 'resume'] as const) expectRefused(await control(theirs, action), 404, 'NOT_FOUND', `globex ${action}`);
    expect((await scheduleOf(theirs, globex.ownerToken)).paused).to.equal(false);
    for (const id of ['not-a-uuid', '00000000-0000-4000-8000-000000000000', acme.projectId]) expectRefused(await control(id, 'pause'), 404, 'NOT_FOUND', id);
    const manual = await publishedWorkflow(acme, 'by-hand', '{type: manual}');
    for (const action of ['pause', 'resume'] as const) {
      const res = await control(manual, action);
      expectRefused(res, 409, 'CONFLICT', `manual ${action}`);
      expect(res.json.error).to.contain('no schedule');
    }
    expect(await scheduleOf(manual)).to.include({ status: 'none', paused: false });
  });
});
