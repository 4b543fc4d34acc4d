// Invariant: a builder-conversation state is only good for a day after it was started, and a replay store that is
// down skips only the replay check: the signature still binds the state, so a changed state is refused regardless.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { answerConversation, CONVERSATION_TTL_MS, startConversation, type ConversationPorts } from '../../../actors/kinds/authoring/conversation.js';

describe('builder conversation (pure)', () => {
  const scope = { orgId: 'o', projectId: 'p', caller: 'user:u' };
  const ports = (now: number, markAnswered: ConversationPorts['markAnswered'] = async () => true): ConversationPorts =>
    ({ key: randomBytes(32), now: () => now, markAnswered });

  it('refuses a state older than its lifetime and accepts one just inside it', async () => {
    const start = Date.UTC(2025, 0, 1);
    const p = ports(start);
    const first = startConversation(scope, { goal: 'g' }, p);
    const late = { ...p, now: () => start + CONVERSATION_TTL_MS + 1 };
    await expectRefusal(answerConversation(scope, first.state, first.conversation, { outcome: 'x' }, late), /expired/);
    const inTime = { ...p, now: () => start + CONVERSATION_TTL_MS };
    const r = await answerConversation(scope, first.state, first.conversation, { outcome: 'x' }, inTime);
    expect(r.state.nextRound).to.equal('steps');
  });

  it('skips only the replay check when the replay store is down', async () => {
    let skipped = 0;
    const p: ConversationPorts = { ...ports(Date.now(), async () => { throw new Error('down'); }), onReplayStoreDown: () => { skipped++; } };
    const first = startConversation(scope, { goal: 'g' }, p);
    const ok = await answerConversation(scope, first.state, first.conversation, { outcome: 'x' }, p);
    expect(ok.status).to.equal('question');
    expect(skipped).to.equal(1);
    await expectRefusal(answerConversation(scope, { ...first.state, goal: 'h' }, first.conversation, { outcome: 'x' }, p), /changed in transit/);
  });
});

async function expectRefusal(promise: Promise<unknown>, message: RegExp): Promise<void> {
  try {
    await promise;
  } catch (err) {
    expect((err as { code?: string }).code).to.equal('VALIDATION_FAILED');
    expect((err as Error).message).to.match(message);
    return;
  }
  expect.fail('expected a refusal');
}
