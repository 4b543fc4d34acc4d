// Invariant: the admission gate serves at most `concurrency` writes at once, lets at most `queue` wait in arrival
// order, refuses the next at once and a waiter whose wait ran out, each with OVERLOADED (503, retryable) and why.
import { expect } from 'chai';
import { AdmissionGate, type ShedReason } from '../../../http/admission.js';
import { TroupeError } from '../../../ops/kernel/errors.js';

const refusedWith = async (p: Promise<void>): Promise<string> => {
  try {
    await p;
    return 'admitted';
  } catch (err) {
    expect(err).to.be.instanceOf(TroupeError);
    expect((err as TroupeError).code).to.equal('OVERLOADED');
    expect((err as TroupeError).status).to.equal(503);
    return String((err as TroupeError).details?.reason);
  }
};

describe('admission gate', () => {
  it('admits up to its concurrency at once, then queues in order, then refuses at once', async () => {
    const shed: ShedReason[] = [];
    const gate = new AdmissionGate({ concurrency: 2, queue: 2, maxWaitMs: 10_000 }, { onShed: (r) => shed.push(r) });
    expect(gate.enter(0)).to.equal(undefined);
    expect(gate.enter(0)).to.equal(undefined);
    const order: string[] = [];
    const third = gate.enter(0)!.then(() => order.push('third'));
    const fourth = gate.enter(0)!.then(() => order.push('fourth'));
    expect(() => gate.enter(0)).to.throw(TroupeError).with.property('code', 'OVERLOADED');
    expect(shed).to.deep.equal(['queue_full']);
    expect({ serving: gate.serving, waiting: gate.waiting }).to.deep.equal({ serving: 2, waiting: 2 });
    gate.leave(1);
    await third;
    expect(order).to.deep.equal(['third']);
    gate.leave(1);
    await fourth;
    expect(order).to.deep.equal(['third', 'fourth']);
    expect({ serving: gate.serving, waiting: gate.waiting }).to.deep.equal({ serving: 2, waiting: 0 });
    gate.leave(2);
    gate.leave(2);
    expect(gate.serving).to.equal(0);
  });

  it('refuses a waiter whose wait ran out instead of admitting it late, and admits the next one in time', async () => {
    const gate = new AdmissionGate({ concurrency: 1, queue: 10, maxWaitMs: 100 });
    gate.enter(0);
    const late = gate.enter(0)!;
    const inTime = gate.enter(50)!;
    gate.leave(120);
    expect(await refusedWith(late)).to.equal('waited_too_long');
    expect(await refusedWith(inTime)).to.equal('admitted');
    expect(gate.serving).to.equal(1);
  });

  it('refuses an expired waiter on its own, with no slot freed', async () => {
    const gate = new AdmissionGate({ concurrency: 1, queue: 10, maxWaitMs: 20 });
    gate.enter();
    const started = performance.now();
    expect(await refusedWith(gate.enter()!)).to.equal('waited_too_long');
    expect(performance.now() - started).to.be.below(500);
    expect(gate.waiting).to.equal(0);
  });

  it('with no queue, refuses the first request over its concurrency', () => {
    const gate = new AdmissionGate({ concurrency: 1, queue: 0, maxWaitMs: 100 });
    gate.enter();
    expect(() => gate.enter()).to.throw(TroupeError).with.nested.property('details.reason', 'queue_full');
  });
});

