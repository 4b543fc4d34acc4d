// Invariant (issue 30): password checks take one slot per process and wait in a short line, so guessers from many
// addresses cannot keep every thread hashing; past the line a check is refused with 503 OVERLOADED, and every
// check that was let in still answers right.
import { expect } from 'chai';
import { hashPassword, verifyPassword } from '../../../actors/services/identity/passwords.js';
import { TroupeError } from '../../../ops/kernel/errors.js';

describe('password checks', function () {
  this.timeout(60_000);

  it('verifies the right password and refuses a wrong one', async () => {
    const stored = await hashPassword('correct horse');
    expect(await verifyPassword('correct horse', stored)).to.equal(true);
    expect(await verifyPassword('wrong horse', stored)).to.equal(false);
    expect(await verifyPassword('x', 'not-a-hash')).to.equal(false);
  });

  it('runs checks one at a time, and refuses those past a line of 16 with OVERLOADED', async () => {
    const stored = await hashPassword('correct horse');
    const started = performance.now();
    const one = await verifyPassword('correct horse', stored).then(() => performance.now() - started);
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => verifyPassword(i === 0 ? 'correct horse' : 'guess', stored)));
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused).to.have.length(3);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).to.be.instanceOf(TroupeError).and.include({ code: 'OVERLOADED' });
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'refused')).slice(0, 17)).to.deep.equal([true, ...Array(16).fill(false)]);
    // In line, not all at once: four checks take about four times one.
    const serialStarted = performance.now();
    await Promise.all(Array.from({ length: 4 }, () => verifyPassword('guess', stored)));
    expect(performance.now() - serialStarted).to.be.greaterThan(3 * one * 0.7);
  });
});
