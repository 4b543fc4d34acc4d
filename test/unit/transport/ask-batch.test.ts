/** Batch bodies read back exactly as written, refuse anything else, and the turn outbox keeps order and bounds. */
import { expect } from 'chai';
import { createEnvelope, encodeEnvelope, MalformedEnvelopeError } from '../../../transport/envelope.js';
import { MAX_PER_BATCH, TurnOutbox, decodeBatch, encodeBatch, type Outgoing } from '../../../transport/amqp/ask-batch.js';

const ask = (n: number) => createEnvelope({ type: 'ask', to: `a/${n}`, from: 'node', deadline: Date.now() + 60_000, payload: { n, text: 'line\nbreak "quoted"' } });
const reply = (n: number) => createEnvelope({ type: 'reply', to: 'node', from: 'other', deadline: Date.now() + 60_000, correlationId: `c-${n}`, payload: { v: 1, ok: true, value: n } });
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('ask and reply batches', () => {
  it('decodes what it encodes, in order, newlines inside payloads included', () => {
    const asks = [ask(1), ask(2), ask(3)];
    expect(decodeBatch(encodeBatch(asks.map(encodeEnvelope)), 'ask')).to.deep.equal(asks);
    const replies = [reply(1), reply(2)];
    expect(decodeBatch(encodeBatch(replies.map(encodeEnvelope)), 'reply')).to.deep.equal(replies);
  });

  it('refuses another envelope type, an empty or broken line, and more than the batch limit', () => {
    const bodies = (n: number) => Array.from({ length: n }, (_, i) => encodeEnvelope(ask(i)));
    const refused = [
      encodeBatch([encodeEnvelope(ask(1)), encodeEnvelope(reply(1))]),
      Buffer.concat([encodeEnvelope(ask(1)), Buffer.from('\n')]),
      Buffer.from(''),
      Buffer.from(`${encodeEnvelope(ask(1)).toString()}\n{"v":1}`),
      encodeBatch(bodies(MAX_PER_BATCH + 1)),
    ];
    for (const body of refused) expect(() => decodeBatch(body, 'ask'), body.toString().slice(0, 60)).to.throw(MalformedEnvelopeError);
    expect(() => decodeBatch(encodeBatch([encodeEnvelope(ask(1))]), 'reply')).to.throw(MalformedEnvelopeError);
    expect(decodeBatch(encodeBatch(bodies(MAX_PER_BATCH)), 'ask')).to.have.length(MAX_PER_BATCH);
  });

  it('sends a turn’s messages per key once the turn is over, in order and in chunks of at most the limit', async () => {
    const sent: Array<{ key: number; ids: string[] }> = [];
    const outbox = new TurnOutbox<number>((key, messages) => sent.push({ key, ids: messages.map((m) => m.id) }));
    const message = (id: string): Outgoing => ({ id, body: Buffer.from(id) });
    for (let i = 0; i < MAX_PER_BATCH + 2; i += 1) outbox.add(1, message(`one-${i}`));
    outbox.add(2, message('two-0'));
    expect(sent).to.deep.equal([]);
    await turn();
    expect(sent.map((s) => [s.key, s.ids.length])).to.deep.equal([[1, MAX_PER_BATCH], [1, 2], [2, 1]]);
    expect(sent.flatMap((s) => (s.key === 1 ? s.ids : []))).to.deep.equal(Array.from({ length: MAX_PER_BATCH + 2 }, (_, i) => `one-${i}`));
  });

  it('flushes one key at once on demand, leaving the others for the end of the turn', async () => {
    const sent: string[][] = [];
    const outbox = new TurnOutbox<string>((_key, messages) => sent.push(messages.map((m) => m.id)));
    outbox.add('x', { id: 'x1', body: Buffer.from('x') });
    outbox.add('y', { id: 'y1', body: Buffer.from('y') });
    outbox.flushKey('x');
    expect(sent).to.deep.equal([['x1']]);
    await turn();
    expect(sent).to.deep.equal([['x1'], ['y1']]);
  });

  it('lets a body too large to share a batch travel alone', async () => {
    const sent: number[] = [];
    const outbox = new TurnOutbox<number>((_key, messages) => sent.push(messages.length));
    outbox.add(0, { id: 'small', body: Buffer.alloc(10) });
    outbox.add(0, { id: 'big', body: Buffer.alloc(300 * 1024) });
    outbox.add(0, { id: 'small2', body: Buffer.alloc(10) });
    await turn();
    expect(sent).to.deep.equal([1, 1, 1]);
  });
});
