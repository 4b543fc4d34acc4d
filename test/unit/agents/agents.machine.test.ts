// Invariant: every status × message pair of the agent-card and external-agent machines is either in the transition
// table (and lands in an allowed status) or answers an explicit rejection; another org's actor is NOT_FOUND; an
// accepted marketplace update re-pins and drops exactly the overlay keys whose targets vanished.
import { expect } from 'chai';
import { runCommand } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import { agentCardLifecycle, createAgentCardBehavior, type AgentCardMsg, type AgentCardState } from '../../../actors/kinds/agent-card/index.js';
import { createExternalAgentBehavior, type ExternalAgentMsg, type ExternalAgentState } from '../../../actors/services/integrations/a2a/index.js';
import { normalizePayload } from '../../../actors/services/marketplace/payload.js';

const ORG = 'org-1';
const payload = normalizePayload({ name: 'Bot', prompt: 'p', config: { a: 1, b: { c: 2 } } });
const source = (version: number, p = payload) => ({ version, payload: p, createdAt: '2025-01-01T00:00:00.000Z', changedBy: 'u' });

const cardMsgs: Record<AgentCardMsg['type'], AgentCardMsg> = {
  'agentCard.create': { type: 'agentCard.create', orgId: ORG, payload: { name: 'Bot', prompt: 'p' }, by: 'u' },
  'agentCard.update': { type: 'agentCard.update', orgId: ORG, changes: { prompt: 'q' }, by: 'u' },
  'agentCard.publish': { type: 'agentCard.publish', orgId: ORG, listingId: 'l-1', by: 'u', quota: 50 },
  'agentCard.install': { type: 'agentCard.install', orgId: ORG, listingId: 'l-1', sourceCardId: 's-1', source: source(1), overlay: { 'config.b.c': 9 }, by: 'u' },
  'agentCard.acceptUpdate': {
    type: 'agentCard.acceptUpdate', orgId: ORG, source: source(2, normalizePayload({ name: 'Bot', prompt: 'p2', config: { a: 1 } })), by: 'u',
  },
};

function cardIn(status: (typeof agentCardLifecycle)[number]): AgentCardState {
  const behavior = createAgentCardBehavior();
  const empty = behavior.initial('c-1');
  if (status === 'absent') return empty;
  const r = runCommand(behavior, empty, status === 'authored' ? cardMsgs['agentCard.create'] : cardMsgs['agentCard.install'], { id: 'c-1' });
  if (!r.ok) throw new Error('setup failed');
  return r.state;
}

walkTable(createAgentCardBehavior(), {
  title: 'agent-card machine: every status × message pair, from its table',
  statesIn: (status) => [cardIn(status as (typeof agentCardLifecycle)[number])],
  messagesOf: (type) => [cardMsgs[type as AgentCardMsg['type']]],
  ctx: { id: 'c-1' },
  refusedWith: (from, type) => {
    if (from === 'absent') return 'NOT_FOUND';
    return type === 'agentCard.create' || type === 'agentCard.install' ? 'ALREADY_EXISTS' : 'CONFLICT';
  },
});

describe('agent-card machine', () => {
  it('hides a card from another org', () => {
    const r = runCommand(createAgentCardBehavior(), cardIn('authored'), { ...cardMsgs['agentCard.update'], orgId: 'org-2' });
    expect(r.ok ? 'ok' : r.rejection.code).to.equal('NOT_FOUND');
  });

  it('accepting an update drops vanished overlay targets and audits each', () => {
    const r = runCommand(createAgentCardBehavior(), cardIn('installed'), cardMsgs['agentCard.acceptUpdate'], { id: 'c-1' });
    if (!r.ok) throw new Error(r.rejection.message);
    expect(r.reply.dropped).to.deep.equal(['config.b.c']);
    expect(r.state.card?.install).to.deep.include({ pinnedVersion: 2, overlay: {} });
    expect(r.effects.filter((e) => e.type === 'overlayDropped')).to.have.length(1);
    const again = runCommand(createAgentCardBehavior(), r.state, cardMsgs['agentCard.acceptUpdate'], { id: 'c-1' });
    expect(again.ok ? 'ok' : again.rejection.code).to.equal('CONFLICT');
  });

  it('refuses an install whose overlay targets a field the source lacks', () => {
    const r = runCommand(createAgentCardBehavior(), cardIn('absent'), { ...cardMsgs['agentCard.install'], overlay: { nope: 1 } });
    expect(r.ok ? 'ok' : r.rejection.code).to.equal('VALIDATION_FAILED');
  });
});

const card = { name: 'A', url: 'https://a.example/', version: '1', description: '', skills: [] };
const agentMsgs: Record<ExternalAgentMsg['type'], ExternalAgentMsg> = {
  'externalAgent.register': { type: 'externalAgent.register', orgId: ORG, url: 'https://a.example/', card, fetchedAt: 1, by: 'u' },
  'externalAgent.setTrust': { type: 'externalAgent.setTrust', orgId: ORG, trustLevel: 'internal', by: 'u' },
  'externalAgent.refreshed': { type: 'externalAgent.refreshed', orgId: ORG, card: null, fetchedAt: 2 },
};

const externalAgent = createExternalAgentBehavior();
const registered = (): ExternalAgentState => {
  const r = runCommand(externalAgent, externalAgent.initial('a-1'), agentMsgs['externalAgent.register'], { id: 'a-1' });
  if (!r.ok) throw new Error('setup failed');
  return r.state;
};

walkTable(externalAgent, {
  title: 'external-agent machine: every status × message pair, from its table',
  statesIn: (status) => [status === 'absent' ? externalAgent.initial('a-1') : registered()],
  messagesOf: (type) => [agentMsgs[type as ExternalAgentMsg['type']]],
  ctx: { id: 'a-1' },
  refusedWith: (from) => (from === 'absent' ? 'NOT_FOUND' : 'ALREADY_EXISTS'),
});

describe('external-agent machine', () => {
  const behavior = externalAgent;
  it('a failed re-fetch keeps the card and marks the agent unreachable; a late result never overwrites a newer one', () => {
    const r = runCommand(behavior, registered(), agentMsgs['externalAgent.refreshed'], { id: 'a-1' });
    if (!r.ok) throw new Error('refused');
    expect(r.state.agent).to.deep.include({ reachable: false, lastFetchedAt: 2, card });
    const late = runCommand(behavior, r.state, { ...agentMsgs['externalAgent.refreshed'], card, fetchedAt: 1 }, { id: 'a-1' });
    expect(late.ok && late.changed).to.equal(false);
  });

  it('hides an agent from another org', () => {
    const r = runCommand(behavior, registered(), { ...agentMsgs['externalAgent.setTrust'], orgId: 'org-2' });
    expect(r.ok ? 'ok' : r.rejection.code).to.equal('NOT_FOUND');
  });
});
