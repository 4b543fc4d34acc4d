// Invariant: a rate-limit count that Redis does not answer within its budget is answered from the node's memory
// (a hung Redis must not hold a dispatch), an answer in time is Redis's own, and a late answer changes nothing.
import net from 'node:net';
import { expect } from 'chai';
import { withinBudget } from '../../../storage/rate-limits.js';

const after = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));
const never = () => new Promise<string>(() => undefined);

describe('rate limits: Redis answers within a budget or memory answers', () => {
  it('takes the call’s answer when it comes in time, and its refusal too', async () => {
    expect(await withinBudget(after(1, 'redis'), async () => 'memory', 50)).to.equal('redis');
    const refused = await withinBudget(Promise.reject(new Error('limited')), async () => 'memory', 50).catch((err: Error) => err.message);
    expect(refused).to.equal('limited');
  });

  it('answers from the fallback once the budget has passed, without waiting for the call', async () => {
    const started = performance.now();
    expect(await withinBudget(never(), async () => 'memory', 20)).to.equal('memory');
    expect(performance.now() - started).to.be.lessThan(200);
  });

  it('a late answer or refusal of the call is dropped', async () => {
    let rejectLate!: (err: Error) => void;
    const late = new Promise<string>((_, reject) => { rejectLate = reject; });
    expect(await withinBudget(late, async () => 'memory', 5)).to.equal('memory');
    rejectLate(new Error('too late'));
    await after(5, undefined);
  });

  it('an answer already on the socket when a blocked event loop comes back still wins over the budget', async () => {
    let echoed!: () => void;
    const echoSent = new Promise<void>((resolve) => { echoed = resolve; });
    // Redis is another process: its answer is on the socket before the node looks. The echo is sent before the budget starts.
    const server = net.createServer((socket) => socket.on('data', (d) => { socket.write(d); echoed(); }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise<void>((resolve) => client.once('connect', resolve));
    try {
      const reply = new Promise<string>((resolve) => client.once('data', (d) => resolve(d.toString())));
      client.write('redis');
      await echoSent;
      const answer = withinBudget(reply, async () => 'memory', 10);
      // A busy node: the echo arrives and the budget runs out while it is blocked; the socket is read first.
      const until = performance.now() + 60;
      while (performance.now() < until) { /* blocked */ }
      expect(await answer).to.equal('redis');
    } finally {
      client.destroy();
      server.close();
    }
  });
});
