// Invariant (issue 36, decision 0085): however workers race, no more sessions of one concurrency key hold a claim than
// the project's limit: a claim past it is refused with 409 CONCURRENCY_LIMIT and leaves the session pending, to be
// claimed once a place is given back. Keys of projects without a setting are not limited at claim either.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';
import { expectRefused } from './support.js';

for (const { set, skip } of engineSets) describe(`the concurrency limit at claim time (${set} engines)`, function () {
  if (skip) return;
  this.timeout(120_000);
  let t: TestNode;
  before(async () => { t = await startTestNode({ engines: set }); });
  after(async () => { await t?.close(); });

  const status = async (org: Org, id: string) => (await t.call('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json.status as string;
  const limit = async (org: Org, defaultLimit: number) => {
    const res = await t.call('PUT', `/api/projects/${org.projectId}/concurrency`, { token: org.ownerToken, body: { defaultLimit, strategy: 'queue' } });
    expect(res.status, res.text).to.equal(200);
  };

  it('lets exactly the limit of racing claims of one key through, refuses the rest 409 and leaves them pending', async () => {
    const org = await provisionOrg(t, 'Racing');
    await limit(org, 2);
    const workers: Daemon[] = [];
    for (let i = 0; i < 6; i++) workers.push(await registerDaemon(t, org, `racer-${i}`));
    for (let round = 0; round < 5; round++) {
      const ids = [];
      for (let i = 0; i < 6; i++) ids.push(await dispatch(t, org, { concurrencyKey: `branch:race-${round}` }));
      // Six workers each claim a different session of the key at the same instant, as six polls may have offered them.
      const replies = await Promise.all(ids.map((id, i) => report(t, workers[i]!, id, 'claimed')));
      const won = ids.filter((_, i) => replies[i]!.status === 200);
      expect(won, `round ${round}: ${replies.map((r) => r.status).join(',')}`).to.have.length(2);
      replies.filter((r) => r.status !== 200).forEach((r) => expectRefused(r, 409, 'CONCURRENCY_LIMIT', `round ${round}`));
      const lost = ids.filter((id) => !won.includes(id));
      for (const id of lost) expect(await status(org, id), 'a refused claim leaves the session pending').to.equal('pending');
      // A place given back is a place a waiting session may claim.
      const winner = workers[ids.indexOf(won[0]!)]!;
      for (const s of ['running', 'finalizing', 'completed']) expect((await report(t, winner, won[0]!, s)).status).to.equal(200);
      const next = workers[ids.indexOf(lost[0]!)]!;
      expect((await report(t, next, lost[0]!, 'claimed')).status).to.equal(200);
      expectRefused(await report(t, workers[ids.indexOf(lost[1]!)]!, lost[1]!, 'claimed'), 409, 'CONCURRENCY_LIMIT', 'still full');
      // Clean up the round: everything of the key is stopped so the next round starts empty.
      for (const id of ids) await t.call('POST', `/api/public/sessions/${id}/stop`, { token: org.apiKey });
    }
  });

  it('does not limit keys at claim in a project without a setting', async () => {
    const org = await provisionOrg(t, 'Unlimited');
    const [a, b] = [await registerDaemon(t, org, 'a'), await registerDaemon(t, org, 'b')];
    const [x, y] = [await dispatch(t, org, { concurrencyKey: 'same' }), await dispatch(t, org, { concurrencyKey: 'same' })];
    const replies = await Promise.all([report(t, a, x, 'claimed'), report(t, b, y, 'claimed')]);
    expect(replies.map((r) => r.status)).to.deep.equal([200, 200]);
  });
});
