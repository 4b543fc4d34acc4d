// Invariant: publishing a workflow with a schedule trigger starts its schedule; each fire starts exactly one run of
// the version published at that moment, listed newest first with its trigger kind, fire time, version and input;
// a republish moves the schedule to the new version and archiving ends it; with `overlap: skip` no fire starts a run
// while the previous one is live (the fire is listed as skipped); the schedule and the runs are visible only to the
// workflow's org, and a definition whose cron or zone is wrong is refused with the field named.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';

const definition = (name: string, trigger: string, nodes = '  - {id: done, kind: wait, seconds: 0}') =>
  `schemaVersion: v2\nname: ${name}\ntrigger: ${trigger}\nnodes:\n${nodes}\nedges: []\n`;

for (const { set, skip } of engineSets) describe(`workflows: schedule triggers (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;

  before(async () => {
    t = await startTestNode({ engines: set, config: { scheduleScanMs: 500 } });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  const api = (method: string, path: string, body?: unknown, token = org.ownerToken) => t.inject(method, path, { token, ...(body === undefined ? {} : { body }) });
  async function publishedWorkflow(name: string, yaml: string): Promise<string> {
    const created = await api('POST', `/api/projects/${org.projectId}/workflows`, { name, definitionYaml: yaml });
    expect(created.status, created.text).to.equal(201);
    const published = await api('PATCH', `/api/workflows/${created.json.id}`, { status: 'published' });
    expect(published.status, published.text).to.equal(200);
    return created.json.id as string;
  }
  const runsOf = async (id: string) => {
    const r = await api('GET', `/api/workflows/${id}/runs?limit=100`);
    expect(r.status, r.text).to.equal(200);
    return r.json.runs as Array<{ runId: string; trigger: string; fireTime: string | null; version: number; input: Record<string, unknown>; status: string }>;
  };
  const scheduleOf = async (id: string) => {
    const r = await api('GET', `/api/workflows/${id}/schedule`);
    expect(r.status, r.text).to.equal(200);
    return r.json;
  };

  it('fires one run per fire on the published version, moves with a republish and stops when archived', async () => {
    const id = await publishedWorkflow('every-second', definition('every-second', '{type: schedule, cron: "* * * * * *", overlap: allow}'));
    await eventually(async () => (await runsOf(id)).length >= 3, 'three scheduled runs', 20_000);
    const first = await runsOf(id);
    for (const run of first) {
      expect(run).to.include({ trigger: 'schedule', version: 2 });
      expect(new Date(run.fireTime!).getUTCMilliseconds()).to.equal(0);
      expect(run.input).to.deep.equal({ fireTime: run.fireTime });
    }
    // Newest first, one run per fire time.
    const times = first.map((r) => Date.parse(r.fireTime!));
    expect(times).to.deep.equal([...times].sort((a, b) => b - a));
    expect(new Set(times).size).to.equal(times.length);

    const schedule = await scheduleOf(id);
    expect(schedule).to.include({ status: 'active', cron: '* * * * * *', timezone: 'UTC', overlap: 'allow', catchupWindowSeconds: 60, version: 2 });
    expect(schedule.nextFireTimes).to.have.length(5);
    const next = schedule.nextFireTimes.map((s: string) => Date.parse(s));
    expect(next.slice(1).map((at: number, i: number) => at - next[i])).to.deep.equal([1000, 1000, 1000, 1000]);
    const started = schedule.lastFires.filter((f: { outcome: string }) => f.outcome === 'started');
    expect(started.length).to.be.greaterThan(0);
    for (const fire of started) expect(first.map((r) => r.runId).concat((await runsOf(id)).map((r) => r.runId))).to.include(fire.runId);

    const renamed = await api('PATCH', `/api/workflows/${id}`, { name: 'every-second, renamed' });
    expect(renamed.json).to.include({ status: 'published', version: 3, publishedVersion: 3 });
    await eventually(async () => (await runsOf(id)).some((r) => r.version === 3), 'a run on the republished version', 10_000);
    expect((await scheduleOf(id)).version).to.equal(3);

    const archived = await api('PATCH', `/api/workflows/${id}`, { status: 'archived' });
    expect(archived.status, archived.text).to.equal(200);
    await eventually(async () => (await scheduleOf(id)).status === 'ended', 'schedule ended', 10_000);
    const atEnd = (await runsOf(id)).length;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const after = await runsOf(id);
    expect(after.length).to.equal(atEnd);
    expect((await scheduleOf(id)).nextFireTimes).to.deep.equal([]);
    const all = after.map((r) => r.fireTime);
    expect(new Set(all).size, 'one run per fire').to.equal(all.length);
  });

  it('with overlap skip starts no run while the previous one is live, and lists the fires it skipped', async () => {
    // No worker claims the agent's session, so the first run stays live.
    const id = await publishedWorkflow('overlapping', definition('overlapping', '{type: schedule, cron: "* * * * * *"}', '  - {id: work, kind: agent, prompt: "Take your time"}'));
    await eventually(async () => (await scheduleOf(id)).lastFires.some((f: { outcome: string }) => f.outcome === 'skipped-overlap'), 'a fire skipped for overlap', 15_000);
    const runs = await runsOf(id);
    expect(runs).to.have.length(1);
    expect(runs[0]).to.include({ trigger: 'schedule', status: 'running' });
    const skipped = (await scheduleOf(id)).lastFires.find((f: { outcome: string }) => f.outcome === 'skipped-overlap');
    expect(skipped).to.include({ runId: null });
    expect(skipped.detail).to.contain(runs[0]!.runId);
    await api('PATCH', `/api/workflows/${id}`, { status: 'archived' });
  });

  it('lists manual runs with their input, and a workflow never scheduled as none', async () => {
    const id = await publishedWorkflow('by-hand', definition('by-hand', '{type: manual}'));
    const started = await api('POST', `/api/workflows/${id}/runs`, { input: { ticket: 'ENG-1' } });
    expect(started.status, started.text).to.equal(201);
    const [run] = await runsOf(id);
    expect(run).to.include({ runId: started.json.runId, trigger: 'manual', fireTime: null, version: 2 });
    expect(run!.input).to.deep.equal({ ticket: 'ENG-1' });
    expect(await scheduleOf(id)).to.include({ status: 'none', cron: null, version: null });
  });

  it("refuses a wrong cron expression or zone on publish, and hides a schedule from another org", async () => {
    const created = await api('POST', `/api/projects/${org.projectId}/workflows`, { name: 'bad', definitionYaml: definition('bad', '{type: schedule, cron: "every monday"}') });
    expect(created.status).to.equal(400);
    expect(created.json).to.include({ code: 'VALIDATION_FAILED' });
    expect(created.json.error).to.contain('definitionYaml.trigger.cron');
    const zone = await api('POST', `/api/projects/${org.projectId}/workflows`, { name: 'bad', definitionYaml: definition('bad', '{type: schedule, cron: "0 9 * * *", timezone: Mars/Olympus}') });
    expect(zone.status).to.equal(400);
    expect(zone.json.error).to.contain('definitionYaml.trigger.timezone');
    const typo = await api('POST', `/api/projects/${org.projectId}/workflows`, { name: 'bad', definitionYaml: definition('bad', '{type: schedule, cron: "0 9 * * *", timeZone: UTC}') });
    expect(typo.status).to.equal(400);

    const id = await publishedWorkflow('private', definition('private', '{type: schedule, cron: "0 9 * * *"}'));
    await eventually(async () => (await scheduleOf(id)).status === 'active', 'schedule active');
    for (const path of [`/api/workflows/${id}/schedule`, `/api/workflows/${id}/runs`]) {
      const foreign = await api('GET', path, undefined, other.ownerToken);
      expect(foreign.status, path).to.equal(404);
      expect(foreign.json).to.include({ code: 'NOT_FOUND' });
    }
    expect((await api('GET', `/api/workflows/not-a-uuid/schedule`)).status).to.equal(404);
    expect((await api('GET', `/api/workflows/${id}/schedule`, undefined, 'trp_nonsense')).status).to.equal(401);
  });
});
