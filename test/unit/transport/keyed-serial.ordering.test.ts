/**
 * Invariant: work for one key runs one task at a time in submission order, whatever each task's duration or
 * outcome, while different keys run concurrently; `idle()` waits for everything accepted so far.
 */
import { expect } from 'chai';
import { KeyedSerial } from '../../../transport/keyed-serial.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('KeyedSerial', () => {
  it('runs tasks of one key in order even when earlier ones are slower or fail', async () => {
    const serial = new KeyedSerial();
    const log: number[] = [];
    const results = await Promise.allSettled(
      [5, 0, 3, 0].map((ms, i) =>
        serial.run('k', async () => {
          await pause(ms);
          log.push(i);
          if (i === 1) throw new Error('task 1 fails');
          return i;
        }),
      ),
    );
    expect(log).to.deep.equal([0, 1, 2, 3]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
  });

  it('runs different keys concurrently', async () => {
    const serial = new KeyedSerial();
    let running = 0;
    let peak = 0;
    await Promise.all(
      ['a', 'b', 'c'].map((key) =>
        serial.run(key, async () => {
          running += 1;
          peak = Math.max(peak, running);
          await pause(5);
          running -= 1;
        }),
      ),
    );
    expect(peak).to.equal(3);
  });

  it('idle() waits for queued work and forgets drained keys', async () => {
    const serial = new KeyedSerial();
    let done = 0;
    for (let i = 0; i < 3; i += 1) void serial.run('k', async () => { await pause(2); done += 1; });
    expect(serial.activeKeys).to.equal(1);
    await serial.idle();
    expect(done).to.equal(3);
    expect(serial.activeKeys).to.equal(0);
  });
});
