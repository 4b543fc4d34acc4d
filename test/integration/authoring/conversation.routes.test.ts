// Invariant: the builder conversation asks exactly three rounds in order (outcome, steps, guardrails) over a state the
// client carries in the exact spec 2.3 shape; every turn revalidates the whole state, so any change to it in transit
// (goal, target, workflow, an earlier answer or prompt, the round order, the signature, the conversation it belongs
// to or the caller it was issued to), a replay of an already answered state, a malformed answer and a fourth round
// are all 400; after the third answer it returns the synthesis request. It never changes runtime state.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { addUser, nonHumanTokens, provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { expectRuntimeUnchanged } from './authoring-fixtures.js';

for (const { set, skip } of engineSets) describe(`authoring: builder conversation over HTTP (${set} engines)`, function () {
  if (skip) return;
  this.timeout(180_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;
  let path: string;

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
    path = `/api/projects/${org.projectId}/authoring/conversation`;
  });
  after(async () => { await t?.close(); });

  const post = (body: unknown, token = org.ownerToken, where = path) => t.inject('POST', where, { token, body });
  const answers = [
    { outcome: 'Every failing test has a fix merged' },
    { steps: ['Find the failing tests', 'Write and merge the fix'] },
    { approval: true, approverRole: 'admin' },
  ];

  async function advance(rounds: number): Promise<{ state: any; conversation: any }> {
    let r = await post({ action: 'start', goal: 'Fix flaky tests' });
    expect(r.status, r.text).to.equal(200);
    for (let i = 0; i < rounds; i++) {
      r = await post({ action: 'answer', state: r.json.state, answer: answers[i], conversation: r.json.conversation });
      expect(r.status, r.text).to.equal(200);
    }
    return { state: r.json.state, conversation: r.json.conversation };
  }

  it('round-trips three rounds into a synthesis request, then refuses a fourth', async () => {
    await expectRuntimeUnchanged(t, async () => {
      const start = await post({ action: 'start', goal: 'Fix flaky tests' });
      expect(start.status, start.text).to.equal(200);
      expect(start.json).to.include({ status: 'question', synthesisRequest: null });
      expect(Object.keys(start.json.state).sort()).to.deep.equal(['agentCardId', 'goal', 'kind', 'nextRound', 'schemaVersion', 'target', 'turns', 'workflowId']);
      expect(start.json.state).to.deep.include({ kind: 'builder-conversation', schemaVersion: '1', goal: 'Fix flaky tests', target: 'workflow', nextRound: 'outcome', turns: [] });
      expect(start.json.query.round).to.equal('outcome');
      expect(start.json.conversation).to.include({ round: 0, maxRounds: 3 });

      let r = start;
      const seen: string[] = [];
      for (const answer of answers) {
        seen.push(r.json.query.round);
        r = await post({ action: 'answer', state: r.json.state, answer, conversation: r.json.conversation });
        expect(r.status, r.text).to.equal(200);
      }
      expect(seen).to.deep.equal(['outcome', 'steps', 'guardrails']);
      expect(r.json.status).to.equal('ready');
      expect(r.json.query).to.equal(null);
      expect(r.json.state.nextRound).to.equal('complete');
      expect(r.json.state.turns.map((x: { round: string }) => x.round)).to.deep.equal(['outcome', 'steps', 'guardrails']);
      for (const turn of r.json.state.turns) expect(Number.isNaN(Date.parse(turn.answeredAt))).to.equal(false);
      expect(r.json.synthesisRequest).to.deep.include({
        kind: 'synthesis-request', target: 'workflow', goal: 'Fix flaky tests', outcome: 'Every failing test has a fix merged',
        steps: ['Find the failing tests', 'Write and merge the fix'], approval: true, approverRole: 'admin',
      });

      const fourth = await post({ action: 'answer', state: r.json.state, answer: { outcome: 'more' }, conversation: r.json.conversation });
      expect(fourth.status, fourth.text).to.equal(400);
      expect(fourth.json.error).to.match(/at most 3 rounds/);
    });
  });

  describe('refuses a state changed in transit', () => {
    const tamperings: Array<[string, (s: any, c: any) => void]> = [
      ['the goal', (s) => { s.goal = 'Delete production'; }],
      ['the workflow', (s) => { s.workflowId = '00000000-0000-4000-8000-000000000000'; }],
      ['the agent card', (s) => { s.agentCardId = '00000000-0000-4000-8000-000000000001'; }],
      ['an earlier answer', (s) => { s.turns[0].answer.outcome = 'Something else'; }],
      ['an earlier prompt', (s) => { s.turns[0].prompt = 'Say yes'; }],
      ['an answer time', (s) => { s.turns[0].answeredAt = '2001-01-01T00:00:00.000Z'; }],
      ['a dropped turn', (s) => { s.turns = []; s.nextRound = 'outcome'; }],
      ['a dropped turn keeping the round', (s) => { s.turns.pop(); }],
      ['a skipped round', (s) => { s.nextRound = 'guardrails'; }],
      ['a forged extra turn', (s) => { s.turns.push({ round: 'steps', prompt: s.turns[0].prompt, answer: { steps: ['x'] }, answeredAt: s.turns[0].answeredAt }); }],
      ['a round out of order', (s) => { s.turns[0].round = 'steps'; }],
      ['the target', (s) => { s.target = 'agent-card'; }],
      ['the kind', (s) => { s.kind = 'something-else'; }],
      ['the schema version', (s) => { s.schemaVersion = '2'; }],
      ['an extra member', (s) => { s.admin = true; }],
      ['the signature', (_s, c) => { c.stateMac = `${c.stateMac.slice(0, -2)}${c.stateMac.endsWith('AA') ? 'AB' : 'AA'}`; }],
      ['the conversation id', (_s, c) => { c.id = '00000000-0000-4000-8000-000000000002'; }],
      ['the start time', (_s, c) => { c.startedAt = new Date(Date.parse(c.startedAt) + 1000).toISOString(); }],
    ];
    for (const [what, tamper] of tamperings) {
      it(`400 for ${what}`, async () => {
        const { state, conversation } = await advance(1);
        tamper(state, conversation);
        const r = await post({ action: 'answer', state, answer: answers[1], conversation });
        expect(r.status, r.text).to.equal(400);
        expect(r.json.code).to.equal('VALIDATION_FAILED');
      });
    }

    it('400 for a state replayed after it was answered', async () => {
      const { state, conversation } = await advance(1);
      const first = await post({ action: 'answer', state, answer: answers[1], conversation });
      expect(first.status, first.text).to.equal(200);
      const again = await post({ action: 'answer', state, answer: { steps: ['A different branch'] }, conversation });
      expect(again.status, again.text).to.equal(400);
      expect(again.json.error).to.match(/replayed/);
    });

    it('400 for a state issued to another caller of the same org', async () => {
      const { state, conversation } = await advance(1);
      const admin = await addUser(t, org.orgId, 'admin');
      const r = await post({ action: 'answer', state, answer: answers[1], conversation }, admin.token);
      expect(r.status, r.text).to.equal(400);
    });
  });

  it('refuses a malformed answer without using up the state', async () => {
    const { state, conversation } = await advance(1);
    for (const answer of [{}, { steps: [] }, { steps: ['  '] }, { steps: 'one' }, { outcome: 'wrong round' }, { steps: ['ok'], extra: 1 }]) {
      const r = await post({ action: 'answer', state, answer, conversation });
      expect(r.status, `${JSON.stringify(answer)}: ${r.text}`).to.equal(400);
    }
    const ok = await post({ action: 'answer', state, answer: answers[1], conversation });
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.json.state.nextRound).to.equal('guardrails');
  });

  it('validates the action\'s members and names the field', async () => {
    const cases: unknown[] = [
      { action: 'start' }, { action: 'start', goal: '' }, { action: 'start', goal: '   ' }, { action: 'start', goal: 'x', state: {} },
      { action: 'answer', goal: 'x' }, { action: 'restart', goal: 'x' }, { goal: 'x' }, [], 'start', null,
      { action: 'start', goal: 'x'.repeat(2001) }, { action: 'start', goal: 'x', workflowId: 'not-a-uuid' },
    ];
    for (const body of cases) {
      const r = await post(body);
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).to.equal(400);
    }
  });

  it('checks the named workflow belongs to the project', async () => {
    const w = await t.inject('POST', `/api/projects/${other.projectId}/workflows`, { token: other.ownerToken, body: { name: 'theirs' } });
    expect(w.status, w.text).to.equal(201);
    const r = await post({ action: 'start', goal: 'x', workflowId: w.json.id });
    expect(r.status, r.text).to.equal(404);
  });

  it('tenancy and credentials: 401 without one, 403 for a runtime token, 404 for another org\'s project; API keys work', async () => {
    const body = { action: 'start', goal: 'x' };
    expect((await t.inject('POST', path, { body })).status).to.equal(401);
    const tokens = await nonHumanTokens(t, org);
    expect((await post(body, tokens.runtime)).status).to.equal(403);
    expect((await post(body, org.ownerToken, `/api/projects/${other.projectId}/authoring/conversation`)).status).to.equal(404);
    expect((await post(body, org.ownerToken, '/api/projects/not-a-uuid/authoring/conversation')).status).to.equal(404);
    const viaKey = await post(body, tokens.apiKey);
    expect(viaKey.status, viaKey.text).to.equal(200);
  });
});
