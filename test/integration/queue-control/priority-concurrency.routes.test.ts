// Invariant (issue 36, decision 0081): the poll offers the highest priority first and first come first served within
// one; a session whose concurrency key already has its project's limit of claimed sessions is offered by no poll and
// pushed to no worker (they are asked to poll) until one of the key ends; `cancel-newest` refuses a dispatch past the
// limit with 409 `CONCURRENCY_LIMIT` creating nothing. Bad values are 400 changing nothing; the setting is the org
// admins' and owners' (403 to project roles, members and read keys), readable by project readers, audited, and 404
// for another org's project.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import type { SseClient } from '../streams/sse-client.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';
import { registered } from '../repositories/support.js';
import { auditOf, connect, expectRefused, heardWithin, people, polled, type People } from './support.js';

for (const { set, skip } of engineSets) describe(`priorities and concurrency keys (${set} engines)`, function () {
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

  const concurrencyPath = (org: Org) => `/api/projects/${org.projectId}/concurrency`;
  const setConcurrency = (org: Org, body: unknown, token = org.ownerToken) => t.call('PUT', concurrencyPath(org), { token, body });
  const detail = async (org: Org, id: string) => (await t.call('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json;
  const sessionCount = async (org: Org) => Number((await t.node.deps.db('sessions').where({ org_id: org.orgId }).first(t.node.deps.db.raw('count(*)::int as n')))!.n);
  const finish = async (d: Daemon, id: string) => {
    for (const status of ['running', 'finalizing', 'completed']) expect((await report(t, d, id, status)).status, status).to.equal(200);
  };

  it('offers priorities 2, 9, 5 queued behind a busy worker as 9, 5, 2, and first come first served within a priority', async () => {
    const org = await provisionOrg(t, 'Priorities');
    const d = await registerDaemon(t, org, 'host-busy');
    const busy = await dispatch(t, org);
    expect((await report(t, d, busy, 'claimed')).status).to.equal(200);
    const [low, high, middle] = [await dispatch(t, org, { priority: 2 }), await dispatch(t, org, { priority: 9 }), await dispatch(t, org, { priority: 5 })];
    const laterMiddle = await dispatch(t, org);
    expect(await polled(t, d)).to.deep.equal([high, middle, laterMiddle, low]);
    // One place at a time, as a worker of capacity 1 takes them.
    await finish(d, busy);
    for (const expected of [high, middle, laterMiddle, low]) {
      expect(await polled(t, d, 1)).to.deep.equal([expected]);
      expect((await report(t, d, expected, 'claimed')).status).to.equal(200);
      await finish(d, expected);
    }
    const shown = await detail(org, high);
    expect([shown.priority, shown.concurrencyKey]).to.deep.equal([9, null]);
    expect((await detail(org, laterMiddle)).priority, 'the default').to.equal(5);
  });

  it('under `queue`, never lets two sessions of a key hold a claim: the poll skips the second until the first ends, and pushes become poll nudges', async () => {
    const org = await provisionOrg(t, 'Queued');
    const set = await setConcurrency(org, { defaultLimit: 1, strategy: 'queue' });
    expect([set.status, set.json]).to.deep.equal([200, { projectId: org.projectId, configured: true, defaultLimit: 1, strategy: 'queue' }]);
    const d = await registerDaemon(t, org, 'host-key');
    const s = await connect(t, d, streams);
    const keyed = [await dispatch(t, org, { concurrencyKey: 'branch:main' }), await dispatch(t, org, { concurrencyKey: 'branch:main' }),
      await dispatch(t, org, { concurrencyKey: 'branch:main' })];
    const unkeyed = await dispatch(t, org);
    await s.next((f) => f.event === 'offer' && f.data.session.id === unkeyed, 2_000);
    expect(await heardWithin(s, (f) => f.event === 'offer' && keyed.includes(f.data.session.id), 300), 'a keyed session pushed').to.equal(false);
    await s.next((f) => f.event === 'poll' && f.data.projectId === org.projectId, 2_000);
    expect((await detail(org, keyed[0]!)).concurrencyKey).to.equal('branch:main');
    // One poll hands out one session of the key, however much room the worker has.
    expect(await polled(t, d)).to.deep.equal([keyed[0], unkeyed]);
    expect((await report(t, d, unkeyed, 'claimed')).status).to.equal(200);
    for (let i = 0; i < keyed.length; i++) {
      expect((await report(t, d, keyed[i]!, 'claimed')).status).to.equal(200);
      for (const status of ['running', 'finalizing']) {
        expect(await polled(t, d), `while ${keyed[i]} is ${status === 'running' ? 'claimed' : 'running'}`).to.deep.equal([]);
        expect((await report(t, d, keyed[i]!, status)).status).to.equal(200);
      }
      expect(await polled(t, d), `while ${keyed[i]} finalizes`).to.deep.equal([]);
      const ended = s.next((f) => f.event === 'poll' && f.data.projectId === org.projectId, 2_000);
      expect((await report(t, d, keyed[i]!, 'completed')).status).to.equal(200);
      await ended; // the workers are told to poll when a place is given back
      expect(await polled(t, d), `after ${keyed[i]} ended`).to.deep.equal(keyed.slice(i + 1, i + 2));
    }
  });

  it('records default keys: `issue:<trackerIssue>` for a tracker issue, none otherwise; with no setting nothing is held back', async () => {
    const org = await provisionOrg(t, 'Defaults');
    const d = await registerDaemon(t, org, 'host-defaults');
    const fromIssue = await dispatch(t, org, { trackerIssue: 'ENG-7' });
    const plain = await dispatch(t, org);
    const a = await dispatch(t, org, { concurrencyKey: 'k' });
    const b = await dispatch(t, org, { concurrencyKey: 'k' });
    expect((await detail(org, fromIssue)).concurrencyKey).to.equal('issue:ENG-7');
    expect((await detail(org, plain)).concurrencyKey).to.equal(null);
    const repository = await registered(t, org, { url: 'https://github.com/acme/keys.git', defaultBranch: 'main' });
    const onMain = await dispatch(t, org, { repository: repository.id });
    const onBranch = await dispatch(t, org, { repository: repository.id, ref: 'feature/x' });
    expect((await detail(org, onMain)).concurrencyKey).to.equal(`repo:${repository.id}:main`);
    expect((await detail(org, onBranch)).concurrencyKey).to.equal(`repo:${repository.id}:feature/x`);
    expect((await polled(t, d)).sort()).to.deep.equal([fromIssue, plain, a, b, onMain, onBranch].sort());
    expect((await t.call('GET', concurrencyPath(org), { token: org.ownerToken })).json)
      .to.deep.equal({ projectId: org.projectId, configured: false, defaultLimit: null, strategy: null });
  });

  it('under `cancel-newest`, refuses a dispatch past the limit with 409 CONCURRENCY_LIMIT and creates nothing', async () => {
    const org = await provisionOrg(t, 'Newest');
    expect((await setConcurrency(org, { defaultLimit: 1, strategy: 'cancel-newest' })).status).to.equal(200);
    const d = await registerDaemon(t, org, 'host-newest');
    const first = await dispatch(t, org, { concurrencyKey: 'deploy' });
    const before = await sessionCount(org);
    const refused = await t.inject('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'again', concurrencyKey: 'deploy' } });
    expectRefused(refused, 409, 'CONCURRENCY_LIMIT', 'second of the key');
    expect(await sessionCount(org), 'nothing created').to.equal(before);
    // Another key, and a retry of the first dispatch, are not refused.
    await dispatch(t, org, { concurrencyKey: 'other' });
    expect((await report(t, d, first, 'claimed')).status).to.equal(200);
    await finish(d, first);
    await dispatch(t, org, { concurrencyKey: 'deploy' });
  });

  it('under `cancel-in-progress`, stops the running session of the key (`stopReason: "superseded"`, a stop signal to its worker) and queues the new one', async () => {
    const org = await provisionOrg(t, 'Superseding');
    expect((await setConcurrency(org, { defaultLimit: 1, strategy: 'cancel-in-progress' })).status).to.equal(200);
    const d = await registerDaemon(t, org, 'host-supersede');
    const s = await connect(t, d, streams);
    const first = await dispatch(t, org, { concurrencyKey: 'main' });
    expect(await polled(t, d)).to.deep.equal([first]);
    for (const status of ['claimed', 'running']) expect((await report(t, d, first, status)).status).to.equal(200);
    const second = await dispatch(t, org, { concurrencyKey: 'main' });
    await s.next((f) => f.event === 'stop' && f.data.sessionId === first, 2_000);
    const stopped = await detail(org, first);
    expect([stopped.status, stopped.stopReason]).to.deep.equal(['stopped', 'superseded']);
    expect((await detail(org, second)).status).to.equal('pending');
    expect(await polled(t, d)).to.deep.equal([second]);
    expect((await report(t, d, second, 'claimed')).status).to.equal(200);
    const entries = await auditOf(t, org, ['session.stopped']);
    expect(entries.map((e) => [e.subject, e.actor, e.payload.stopReason, e.payload.supersededBy])).to.deep.equal([[first, 'system:concurrency', 'superseded', second]]);
  });

  it('answers bad priorities, keys and settings with 400, changing nothing', async () => {
    const org = await provisionOrg(t, 'Hostile');
    for (const extra of [{ priority: 10 }, { priority: -1 }, { priority: 2.5 }, { priority: '5' }, { priority: null },
      { concurrencyKey: '' }, { concurrencyKey: 'k'.repeat(201) }, { concurrencyKey: 'a\u0001b' }, { concurrencyKey: 'line\nbreak' }, { concurrencyKey: 7 }]) {
      const res = await t.inject('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'x', ...extra } });
      expectRefused(res, 400, 'VALIDATION_FAILED', JSON.stringify(extra));
    }
    expect(await sessionCount(org)).to.equal(0);
    for (const body of [{ defaultLimit: 0, strategy: 'queue' }, { defaultLimit: 1.5, strategy: 'queue' }, { defaultLimit: 1, strategy: 'fifo' },
      { defaultLimit: 1 }, { strategy: 'queue' }, { defaultLimit: 1, strategy: 'queue', projectId: globex.projectId }, []]) {
      expectRefused(await setConcurrency(org, body), 400, 'VALIDATION_FAILED', JSON.stringify(body));
    }
    expect((await t.call('GET', concurrencyPath(org), { token: org.ownerToken })).json.configured).to.equal(false);
  });

  it('lets org admins, owners and admin keys set it and project readers read it; refuses project roles, members and read keys (403); audits changes', async () => {
    const refused: Array<[string, string]> = [
      ['member', acme.memberToken], ['org viewer', who.orgViewer], ['project admin', who.projectAdmin], ['project editor', who.projectEditor],
      ['project viewer', who.projectViewer], ['read key', who.readKey],
    ];
    for (const [what, token] of refused) expectRefused(await setConcurrency(acme, { defaultLimit: 2, strategy: 'queue' }, token), 403, 'AUTHZ_DENIED', what);
    expect((await t.call('GET', concurrencyPath(acme), { token: who.projectViewer })).json.configured, 'nothing changed').to.equal(false);
    expect((await setConcurrency(acme, { defaultLimit: 2, strategy: 'queue' }, who.orgAdmin)).status).to.equal(200);
    expect((await setConcurrency(acme, { defaultLimit: 2, strategy: 'queue' }, acme.apiKey)).status, 'the same again').to.equal(200);
    expect((await setConcurrency(acme, { defaultLimit: 3, strategy: 'cancel-newest' })).status).to.equal(200);
    const shown = await t.call('GET', concurrencyPath(acme), { token: who.projectViewer });
    expect(shown.json).to.deep.equal({ projectId: acme.projectId, configured: true, defaultLimit: 3, strategy: 'cancel-newest' });
    const entries = await auditOf(t, acme, ['project.concurrency.changed']);
    expect(entries.map((e) => [e.subject, e.payload.before?.defaultLimit ?? null, e.payload.after.defaultLimit])).to.deep.equal([
      [acme.projectId, null, 2], [acme.projectId, 2, 3],
    ]);
    expect((await t.call('GET', concurrencyPath(acme))).status).to.equal(401);
  });

  it("is 404 for another org's project and for ids that name no project, changing nothing", async () => {
    expectRefused(await setConcurrency(globex, { defaultLimit: 1, strategy: 'queue' }, acme.ownerToken), 404, 'NOT_FOUND', 'globex set');
    expectRefused(await t.call('GET', concurrencyPath(globex), { token: acme.ownerToken }), 404, 'NOT_FOUND', 'globex read');
    expect((await t.call('GET', concurrencyPath(globex), { token: globex.ownerToken })).json.configured).to.equal(false);
    for (const id of ['not-a-uuid', '00000000-0000-4000-8000-000000000000', acme.orgId, '%00']) {
      expectRefused(await t.call('PUT', `/api/projects/${encodeURIComponent(id)}/concurrency`, { token: acme.ownerToken, body: { defaultLimit: 1, strategy: 'queue' } }),
        404, 'NOT_FOUND', id);
    }
  });
});
