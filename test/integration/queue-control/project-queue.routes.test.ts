// Invariant: a paused project's pending sessions are offered to no worker — a poll answers none of them and the event
// stream pushes no offer — while dispatch still answers 201 pending and a session already claimed runs on to its end;
// resuming sends the project's workers a `poll` and the next poll offers what waited. Pause and resume are idempotent
// (the first pause's time and author stay; only changes are audited), shown by `GET …/queue` and the fleet statistics,
// allowed to org admins and owners, project admins and admin keys, refused (403) to members, viewers, project editors
// and viewers and read keys, and 404 for another org's project or an id that names none, changing nothing.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import type { SseClient } from '../streams/sse-client.js';
import { dispatch, provisionOrg, registerDaemon, report, type Org } from '../sessions/support.js';
import { auditOf, connect, expectRefused, heardWithin, people, polled, type People } from './support.js';

for (const { set, skip } of engineSets) describe(`project queue pause and resume (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let who: People;
  const streams: SseClient[] = [];
  before(async () => {
    t = await startTestNode({ engines: set });
    [acme, globex] = await Promise.all([provisionOrg(t, 'Acme'), provisionOrg(t, 'Globex')]);
    who = await people(t, acme);
  });
  after(async () => {
    for (const s of streams) s.close();
    await t?.close();
  });

  const queuePath = (org: Org, action?: 'pause' | 'resume') => `/api/projects/${org.projectId}/queue${action ? `/${action}` : ''}`;
  const control = (org: Org, action: 'pause' | 'resume', token = org.ownerToken) => t.call('POST', queuePath(org, action), { token });
  const queue = async (org: Org, token = org.ownerToken) => {
    const res = await t.call('GET', queuePath(org), { token });
    expect(res.status, res.text).to.equal(200);
    return res.json;
  };

  it('holds pending sessions back from polls and pushes while paused, lets claimed ones run, and offers them again on resume', async () => {
    const d = await registerDaemon(t, acme, 'host-queue');
    const s = await connect(t, d, streams);
    const running = await dispatch(t, acme);
    expect((await report(t, d, running, 'claimed')).status).to.equal(200);

    const paused = await control(acme, 'pause');
    expect(paused.status, paused.text).to.equal(200);
    expect(paused.json).to.include({ projectId: acme.projectId, paused: true });
    expect(paused.json.pausedBy).to.match(/^user:/);
    expect(Date.parse(paused.json.pausedAt)).to.be.closeTo(Date.now(), 10_000);

    const waiting = await Promise.all([dispatch(t, acme), dispatch(t, acme)]);
    const detail = await t.call('GET', `/api/public/sessions/${waiting[0]}`, { token: acme.apiKey });
    expect(detail.json.status).to.equal('pending');
    expect(await heardWithin(s, (f) => f.event === 'offer' && waiting.includes(f.data.session.id), 1_000), 'an offer pushed while paused').to.equal(false);
    expect(await polled(t, d)).to.deep.equal([]);
    // What was claimed before the pause runs on and ends.
    for (const status of ['running', 'finalizing', 'completed']) expect((await report(t, d, running, status)).status, status).to.equal(200);

    expect(await queue(acme, who.projectViewer)).to.deep.equal({ ...paused.json, pending: 2, weight: 1 });
    const stats = (await t.call('GET', '/api/fleet/stats', { token: acme.apiKey })).json;
    expect(stats.queue.pausedProjects).to.deep.equal([{ projectId: acme.projectId, pausedAt: paused.json.pausedAt, pausedBy: paused.json.pausedBy }]);
    expect(stats.queue.depth).to.equal(2);

    const resumed = await control(acme, 'resume');
    expect(resumed.json).to.deep.equal({ projectId: acme.projectId, paused: false, pausedAt: null, pausedBy: null });
    await s.next((f) => f.event === 'poll' && f.data.projectId === acme.projectId, 2_000);
    expect((await polled(t, d)).sort()).to.deep.equal([...waiting].sort());
    // Offers are pushed again.
    const after = await dispatch(t, acme);
    await s.next((f) => f.event === 'offer' && f.data.session.id === after, 2_000);
    expect((await t.call('GET', '/api/fleet/stats', { token: acme.apiKey })).json.queue.pausedProjects).to.deep.equal([]);
    for (const id of [...waiting, after]) await report(t, d, id, 'claimed');
  });

  it('is idempotent: a second pause keeps the first one\'s time and author, a second resume changes nothing, only changes are audited', async () => {
    const org = await provisionOrg(t, 'Twice');
    const first = await control(org, 'pause');
    const second = await control(org, 'pause', org.apiKey);
    expect(second.status).to.equal(200);
    expect(second.json).to.deep.equal(first.json);
    expect((await control(org, 'resume')).json.paused).to.equal(false);
    const again = await control(org, 'resume', org.apiKey);
    expect([again.status, again.json.paused]).to.deep.equal([200, false]);
    const entries = await auditOf(t, org, ['queue.paused', 'queue.resumed']);
    // The owner paused and resumed; the key's repeats changed nothing and wrote nothing.
    expect(entries.map((e) => [e.type, e.subject, e.actor.split(':')[0]])).to.deep.equal([
      ['queue.paused', org.projectId, 'user'], ['queue.resumed', org.projectId, 'user'],
    ]);
    expect(entries[0]!.payload).to.deep.equal({ projectId: org.projectId });
  });

  it('is allowed to org admins, project admins and admin keys; refused to members, viewers, project editors and viewers and read keys', async () => {
    const refused: Array<[string, string]> = [
      ['member', acme.memberToken], ['org viewer', who.orgViewer], ['project editor', who.projectEditor],
      ['project viewer', who.projectViewer], ['read key', who.readKey],
    ];
    for (const [what, token] of refused) {
      for (const action of ['pause', 'resume'] as const) expectRefused(await control(acme, action, token), 403, 'AUTHZ_DENIED', `${what} ${action}`);
    }
    expect((await queue(acme)).paused, 'nothing changed').to.equal(false);
    for (const [what, token] of [['org admin', who.orgAdmin], ['project admin', who.projectAdmin], ['admin key', acme.apiKey]] as const) {
      const paused = await control(acme, 'pause', token);
      expect([paused.status, paused.json.paused], what).to.deep.equal([200, true]);
      const resumed = await control(acme, 'resume', token);
      expect([resumed.status, resumed.json.paused], what).to.deep.equal([200, false]);
    }
    // Reading the queue is for the project's readers.
    expect((await queue(acme, acme.memberToken)).paused).to.equal(false);
    expect((await t.call('GET', queuePath(acme))).status).to.equal(401);
  });

  it("is 404 for another org's project and for ids that name no project, and changes nothing", async () => {
    for (const action of ['pause', 'resume'] as const) expectRefused(await control(globex, action, acme.ownerToken), 404, 'NOT_FOUND', `globex ${action}`);
    expectRefused(await t.call('GET', queuePath(globex), { token: acme.ownerToken }), 404, 'NOT_FOUND', 'globex read');
    expect((await queue(globex, globex.ownerToken)).paused).to.equal(false);
    for (const id of ['not-a-uuid', '00000000-0000-4000-8000-000000000000', acme.orgId, "'; drop table sessions; --", '%00']) {
      const res = await t.call('POST', `/api/projects/${encodeURIComponent(id)}/queue/pause`, { token: acme.ownerToken });
      expectRefused(res, 404, 'NOT_FOUND', id);
    }
    // A body is not expected and changes nothing either way.
    const withBody = await t.call('POST', queuePath(acme, 'pause'), { token: acme.ownerToken, body: { paused: false, projectId: globex.projectId } });
    expect([withBody.status, withBody.json.projectId]).to.deep.equal([200, acme.projectId]);
    expect((await queue(globex, globex.ownerToken)).paused).to.equal(false);
    await control(acme, 'resume');
  });
});
