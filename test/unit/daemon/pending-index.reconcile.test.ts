// Invariant: the pending-mutation index is exact once seeded — a worker is asked about only while it has
// undelivered mutations — and a reconciliation with the read model never overwrites a change (an actor's
// announcement) that arrived while its query was in flight; before the first reconciliation every worker is asked.
import { expect } from 'chai';
import { parsePendingEvent, PendingIndex } from '../../../actors/services/daemon/pending-index.js';

function deferred<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

describe('PendingIndex', () => {
  it('asks about every worker until seeded, then only about workers with something pending', async () => {
    const index = new PendingIndex();
    expect(index.mayHavePending('w1')).to.equal(true);
    await index.reconcile(async () => new Map([['w2', 3]]));
    expect(index.mayHavePending('w1'), 'nothing pending: no actor message').to.equal(false);
    expect(index.mayHavePending('w2')).to.equal(true);
    index.set('w2', 0);
    expect(index.mayHavePending('w2'), 'delivered: quiet again').to.equal(false);
    index.set('w1', 1);
    expect(index.mayHavePending('w1'), 'an enqueue announced: asked').to.equal(true);
    expect(index.size).to.equal(1);
  });

  it('stays unseeded when the read model cannot be read', async () => {
    const index = new PendingIndex();
    await index.reconcile(async () => { throw new Error('database down'); }).catch(() => undefined);
    expect(index.isSeeded).to.equal(false);
    expect(index.mayHavePending('w1')).to.equal(true);
  });

  it('repairs a missed announcement in both directions', async () => {
    const index = new PendingIndex();
    await index.reconcile(async () => new Map([['stale', 1]]));
    // "stale" was delivered and "missed" enqueued on another node while this node heard nothing.
    await index.reconcile(async () => new Map([['missed', 2]]));
    expect(index.mayHavePending('stale')).to.equal(false);
    expect(index.mayHavePending('missed')).to.equal(true);
  });

  it('an announcement during the query wins over the older answer', async () => {
    const index = new PendingIndex();
    await index.reconcile(async () => new Map([['delivered-meanwhile', 1]]));
    const query = deferred<ReadonlyMap<string, number>>();
    const running = index.reconcile(() => query.promise);
    index.set('enqueued-meanwhile', 1);
    index.set('delivered-meanwhile', 0);
    // The query read the table before both changes committed.
    query.resolve(new Map([['delivered-meanwhile', 1]]));
    await running;
    expect(index.mayHavePending('enqueued-meanwhile')).to.equal(true);
    expect(index.mayHavePending('delivered-meanwhile')).to.equal(false);
  });

  it('runs one reconciliation at a time', async () => {
    const index = new PendingIndex();
    const query = deferred<ReadonlyMap<string, number>>();
    let loads = 0;
    const load = () => { loads++; return query.promise; };
    const first = index.reconcile(load);
    const second = index.reconcile(load);
    query.resolve(new Map());
    await Promise.all([first, second]);
    expect(loads).to.equal(1);
  });

  it('accepts only well-formed announcements', () => {
    expect(parsePendingEvent({ workerId: 'w', pending: 2 })).to.deep.equal({ workerId: 'w', pending: 2 });
    for (const bad of [null, 'x', {}, { workerId: 'w' }, { workerId: 'w', pending: -1 }, { workerId: 'w', pending: 1.5 },
      { workerId: '', pending: 1 }, { workerId: 'w'.repeat(65), pending: 1 }, { workerId: 3, pending: 1 }]) {
      expect(parsePendingEvent(bad), JSON.stringify(bad)).to.equal(undefined);
    }
  });
});
