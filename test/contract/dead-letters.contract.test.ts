/**
 * Invariant: both transports keep what no handler could take, for an operator to see and act on, the same way. A
 * tell whose handler crashes every time runs at most 5 times, then is listed as a dead letter (its address,
 * payload, reason `delivery-limit`) and its shard keeps flowing; replay sends it to its address again (it runs
 * again, and leaves the list); purge removes what it names, or everything; ids that are not dead letters come back
 * as not found, changing nothing. Runs against LocalTransport and AmqpTransport on the real broker.
 */
import { expect } from 'chai';
import type { DeadLetter, Transport } from '../../transport/port.js';
import { eventually, transportFactories, type StartedTransport } from '../support/transport.js';

for (const { kind, start } of transportFactories) {
  describe(`Dead letters contract: ${kind}`, function () {
    this.timeout(30_000);
    let started: StartedTransport;
    let transport: Transport;
    /** Runs per address, and the payloads that reached the handler once it stopped crashing. */
    let runs: Map<string, number>;
    let healed: Set<string>;
    let handled: Array<{ address: string; message: unknown }>;

    beforeEach(async () => {
      runs = new Map();
      healed = new Set();
      handled = [];
      started = await start(async (address, message) => {
        runs.set(address, (runs.get(address) ?? 0) + 1);
        if (address.startsWith('poison/') && !healed.has(address)) throw new Error('handler bug');
        handled.push({ address, message });
        return undefined;
      });
      transport = started.transport;
    });

    afterEach(async () => {
      await transport.deadLetters.purge({ all: true }).catch(() => undefined);
      await started.close();
    });

    async function deadLettered(count: number): Promise<readonly DeadLetter[]> {
      let items: readonly DeadLetter[] = [];
      await eventually(async () => (items = (await transport.deadLetters.list(100)).items).length === count, `${count} dead letters listed`, 20_000);
      return items;
    }

    it('dead-letters a tell that crashes on every run after at most 5 runs, and its shard keeps flowing', async () => {
      await transport.tell('poison/p1', { n: 1 });
      const [letter] = await deadLettered(1);
      expect(letter).to.include({ kind: 'tell', address: 'poison/p1', reason: 'delivery-limit' });
      expect(letter!.payload).to.deep.equal({ n: 1 });
      expect(letter!.bytes).to.be.greaterThan(0);
      expect(Date.parse(letter!.deadLetteredAt!)).to.be.within(Date.now() - 30_000, Date.now() + 1_000);
      expect(runs.get('poison/p1'), 'runs before dead-lettering (default delivery limit 4 returns)').to.equal(5);
      await transport.tell('ok/after', { fine: true });
      await eventually(() => handled.some((h) => h.address === 'ok/after'), 'a later tell handled');
      const page = await transport.deadLetters.list(100);
      expect(page.total).to.equal(1);
      expect(page.bound).to.be.greaterThan(0);
      expect(page.strategy).to.equal(kind === 'local' ? 'in-process' : 'at-least-once');
    });

    it('replays a dead letter to its address, where it runs again and leaves the list', async () => {
      await transport.tell('poison/r1', { again: 'yes' });
      const [letter] = await deadLettered(1);
      healed.add('poison/r1');
      const outcome = await transport.deadLetters.replay({ ids: [letter!.id, 'no-such-id'] });
      expect(outcome).to.deep.equal({ done: [letter!.id], notFound: ['no-such-id'], unreadable: [] });
      await eventually(() => handled.some((h) => h.address === 'poison/r1'), 'the replayed tell handled');
      expect(handled.find((h) => h.address === 'poison/r1')!.message).to.deep.equal({ again: 'yes' });
      expect((await transport.deadLetters.list(100)).total).to.equal(0);
    });

    it('purges the dead letters it names, then all of them; a list is capped by its limit', async () => {
      for (const n of [1, 2, 3]) await transport.tell(`poison/q${n}`, { n });
      const letters = await deadLettered(3);
      expect((await transport.deadLetters.list(2)).items).to.have.length(2);
      const first = letters.find((l) => l.address === 'poison/q1')!;
      expect(await transport.deadLetters.purge({ ids: [first.id] })).to.deep.equal({ done: [first.id], notFound: [], unreadable: [] });
      const left = await transport.deadLetters.list(100);
      expect(left.items.map((l) => l.address).sort()).to.deep.equal(['poison/q2', 'poison/q3']);
      const all = await transport.deadLetters.purge({ all: true });
      expect([...all.done].sort()).to.deep.equal(left.items.map((l) => l.id).sort());
      expect((await transport.deadLetters.list(100)).total).to.equal(0);
      expect(await transport.deadLetters.purge({ ids: [first.id] })).to.deep.equal({ done: [], notFound: [first.id], unreadable: [] });
      // Purged means gone: nothing ran again.
      expect(handled.filter((h) => h.address.startsWith('poison/'))).to.deep.equal([]);
    });
  });
}
