// Invariant: every lifecycle × message pair of the proposal machine either follows the transition table or is an
// explicit rejection; versions only ever grow by one from the version the caller saw, and another org's or
// project's proposal is indistinguishable from an absent one.
import { expect } from 'chai';
import { runCommand } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import { createProposalBehavior } from '../../../actors/kinds/authoring/proposal-actor.js';
import { initialProposalState, type ProposalState } from '../../../actors/kinds/authoring/proposal-machine.js';

const orgId = '11111111-1111-4111-8111-111111111111';
const projectId = '22222222-2222-4222-8222-222222222222';
const d = `sha256:${'a'.repeat(64)}`;
const append = (expectedVersion: number, extra: Record<string, unknown> = {}) => ({
  type: 'proposal.append', orgId, projectId, target: 'workflow', workflowId: '', expectedVersion,
  plan: { name: 'p', description: '', nodes: [{ id: 'a', nodeKey: 'agent', config: { prompt: 'x' } }], edges: [] },
  digests: { candidateDigest: d, baseDigest: d, vocabularyDigest: d, policyDigest: d }, by: 'user:u', ...extra,
});

const behavior = createProposalBehavior();
const draft = (): ProposalState => {
  const r = runCommand(behavior, initialProposalState(), append(0), { id: '33333333-3333-4333-8333-333333333333' });
  if (!r.ok) throw new Error('setup failed');
  return r.state;
};

walkTable(behavior, {
  title: 'proposal machine: every lifecycle × message pair, from its table',
  statesIn: (status) => [status === 'absent' ? initialProposalState() : draft()],
  messagesOf: (_type, state) => [append(state.proposal === null ? 0 : state.proposal.version)],
});

describe('proposal machine', () => {
  it('appends version n+1 only from version n', () => {
    const s = draft();
    const next = runCommand(behavior, s, append(1));
    expect(next.ok && next.reply).to.deep.include({ version: 2, status: 'draft' });
    const stale = runCommand(behavior, s, append(2));
    expect(!stale.ok && stale.rejection).to.deep.include({ code: 'CONFLICT' });
    const collision = runCommand(behavior, s, append(0));
    expect(!collision.ok && collision.rejection.code).to.equal('ALREADY_EXISTS');
    const absent = runCommand(behavior, initialProposalState(), append(1));
    expect(!absent.ok && absent.rejection.code).to.equal('NOT_FOUND');
  });

  it('hides another org\'s or project\'s proposal and refuses a malformed message', () => {
    const s = draft();
    for (const extra of [{ orgId: '44444444-4444-4444-8444-444444444444' }, { projectId: '44444444-4444-4444-8444-444444444444' }]) {
      const r = runCommand(behavior, s, append(1, extra));
      expect(!r.ok && r.rejection.code).to.equal('NOT_FOUND');
    }
    const bad = runCommand(behavior, s, append(1, { digests: { candidateDigest: 'x' } }));
    expect(bad.ok).to.equal(false);
  });
});
