// Invariant: the builder conversation, synthesis and apply take `target: agentCard`: three bounded rounds (role,
// instructions, abilities), then a deterministic candidate card (the same request gives the same bytes) that the
// agent-card routes accept as a payload; apply stores it as an isolated proposal under the same digest rules as
// workflows (candidate, base = the card's version, vocabulary, policy; each stale one is 409 naming it), appends
// versions, and changes no runtime workflow or agent card. Another org's card or proposal is not found.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { expectRuntimeUnchanged } from './authoring-fixtures.js';

for (const { set, skip } of engineSets) describe(`authoring: agent-card drafts (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  const api = (path: string, body: unknown, who: ProvisionedOrg = org) => t.inject('POST', `/api/projects/${who.projectId}/authoring/${path}`, { token: who.ownerToken, body });

  async function converse(goal: string, agentCardId?: string) {
    const started = await api('conversation', { action: 'start', goal, target: 'agentCard', ...(agentCardId ? { agentCardId } : {}) });
    expect(started.status, started.text).to.equal(200);
    expect(started.json.state).to.include({ target: 'agentCard', nextRound: 'role' });
    let reply = started.json;
    const answers = [
      { description: 'Triages new bug reports and labels them.' },
      { instructions: ['Read the whole report first.', ' Never close an issue. '] },
      { capabilities: ['tracker.comment', 'repo.read', 'tracker.comment'], model: 'claude-sonnet' },
    ];
    for (const answer of answers) {
      const next = await api('conversation', { action: 'answer', state: reply.state, conversation: reply.conversation, answer });
      expect(next.status, next.text).to.equal(200);
      reply = next.json;
    }
    expect(reply.status).to.equal('ready');
    return reply.synthesisRequest;
  }

  it('drafts a deterministic, schema-valid card through conversation, synthesis and apply, changing nothing at runtime', async () => {
    const request = await converse('Bug triager');
    expect(request).to.deep.include({
      target: 'agentCard', description: 'Triages new bug reports and labels them.', instructions: ['Read the whole report first.', 'Never close an issue.'],
      capabilities: ['repo.read', 'tracker.comment'], model: 'claude-sonnet',
    });
    const first = await api('synthesize', { synthesisRequest: request });
    const second = await api('synthesize', { synthesisRequest: request });
    expect(first.status, first.text).to.equal(200);
    expect(second.text, 'same request, same bytes').to.equal(first.text);
    const { candidate, digests } = first.json;
    expect(candidate).to.include({ target: 'agentCard', agentCardId: '' });
    expect(candidate.card).to.deep.include({ name: 'Bug triager', description: 'Triages new bug reports and labels them.', capabilities: ['repo.read', 'tracker.comment'], model: 'claude-sonnet' });
    expect(candidate.card.prompt).to.contain('1. Read the whole report first.').and.contain('2. Never close an issue.');
    // Schema-valid: the agent-card route takes it as it is (in another org, so this org's runtime stays untouched).
    expect((await t.inject('POST', '/api/agent-cards', { token: other.ownerToken, body: candidate.card })).status).to.equal(201);

    const cardsBefore = await t.node.deps.db('agent_cards').where({ org_id: org.orgId }).count('* as n');
    let applied: any;
    await expectRuntimeUnchanged(t, async () => {
      applied = await api('apply', { target: 'agentCard', card: candidate.card, ...digests });
    });
    expect(applied.status, applied.text).to.equal(200);
    expect(applied.json).to.include({ applied: true, target: 'agentCard', status: 'draft', version: 1, auditPending: false });
    expect(await t.node.deps.db('agent_cards').where({ org_id: org.orgId }).count('* as n')).to.deep.equal(cardsBefore);

    const read = await t.inject('GET', `/api/projects/${org.projectId}/authoring/proposals/${applied.json.proposalId}`, { token: org.ownerToken });
    expect(read.status, read.text).to.equal(200);
    expect(read.json.proposal).to.include({ target: 'agentCard', agentCardId: '', version: 1 });
    expect(read.json.versions[0].card).to.deep.equal(candidate.card);
    expect(read.json.versions[0].digests).to.deep.equal(digests);
    expect((await t.inject('GET', `/api/projects/${other.projectId}/authoring/proposals/${applied.json.proposalId}`, { token: other.ownerToken })).status).to.equal(404);

    // A reviewed change appends version 2; a changed card with the old digest is stale.
    const edited = { ...candidate.card, description: 'Triages and labels new bug reports.' };
    const stale = await api('apply', { target: 'agentCard', card: edited, ...digests, proposalId: applied.json.proposalId, proposalVersion: 1 });
    expect(stale.status).to.equal(409);
    expect(stale.json.details).to.deep.equal({ stale: 'candidateDigest' });
    const mixed = await api('apply', { target: 'agentCard', card: candidate.card, plan: { name: 'x', description: '', nodes: [], edges: [] }, ...digests });
    expect(mixed.status).to.equal(400);
    const invalid = await api('apply', { target: 'agentCard', card: { ...candidate.card, capabilities: ['Not A Capability'] }, ...digests });
    expect(invalid.status).to.equal(400);
  });

  it('drafts against an existing card: a new card version makes the draft stale (baseDigest); another org\'s card is not found', async () => {
    const created = await t.inject('POST', '/api/agent-cards', { token: org.ownerToken, body: { name: 'Triager', prompt: 'Triage.' } });
    expect(created.status, created.text).to.equal(201);
    const cardId = created.json.agentCard.id as string;
    const request = await converse('Bug triager v2', cardId);
    expect(request.agentCardId).to.equal(cardId);
    const drafted = (await api('synthesize', { synthesisRequest: request })).json;
    expect(drafted.candidate.agentCardId).to.equal(cardId);
    expect((await t.inject('PATCH', `/api/agent-cards/${cardId}`, { token: org.ownerToken, body: { description: 'changed meanwhile' } })).status).to.equal(200);
    const stale = await api('apply', { target: 'agentCard', agentCardId: cardId, card: drafted.candidate.card, ...drafted.digests });
    expect(stale.status).to.equal(409);
    expect(stale.json.details).to.deep.equal({ stale: 'baseDigest' });

    const foreign = await api('conversation', { action: 'start', goal: 'steal', target: 'agentCard', agentCardId: cardId }, other);
    expect(foreign.status).to.equal(404);
    const foreignSynth = await api('synthesize', { synthesisRequest: { ...request, agentCardId: cardId } }, other);
    expect(foreignSynth.status).to.equal(404);
    const withWorkflow = await api('conversation', { action: 'start', goal: 'x', target: 'agentCard', workflowId: cardId });
    expect(withWorkflow.status).to.equal(400);
  });

  it('asks questions instead of guessing, and refuses workflow rounds in a card conversation', async () => {
    const asked = await api('synthesize', { synthesisRequest: { kind: 'synthesis-request', schemaVersion: '1', target: 'agentCard', goal: 'Helper' } });
    expect(asked.status).to.equal(200);
    expect(asked.json.status).to.equal('question');
    expect(asked.json.questions.map((q: { field: string }) => q.field)).to.deep.equal(['description', 'instructions', 'capabilities']);
    const started = (await api('conversation', { action: 'start', goal: 'Helper', target: 'agentCard' })).json;
    const wrong = await api('conversation', { action: 'answer', state: started.state, conversation: started.conversation, answer: { outcome: 'done' } });
    expect(wrong.status).to.equal(400);
    const forged = await api('conversation', { action: 'answer', state: { ...started.state, target: 'workflow', nextRound: 'outcome' }, conversation: started.conversation, answer: { outcome: 'done' } });
    expect(forged.status).to.equal(400);
  });
});
