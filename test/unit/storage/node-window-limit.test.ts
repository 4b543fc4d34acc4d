import { expect } from 'chai';
import { NodeWindowLimit } from '../../../storage/node-window-limit.js';
import { TroupeError } from '../../../ops/kernel/errors.js';

describe('NodeWindowLimit (decision 0082)', () => {
  const refusal = (fn: () => void): TroupeError => {
    try {
      fn();
    } catch (err) {
      return err as TroupeError;
    }
    throw new Error('expected a refusal');
  };

  it('counts each key on its own and refuses past the limit, saying when to retry', () => {
    const limit = new NodeWindowLimit(3, 60_000, 'too many (SETTING)');
    for (let i = 0; i < 3; i++) limit.consume('a', 1_000);
    const err = refusal(() => limit.consume('a', 11_000));
    expect(err.code).to.equal('RATE_LIMITED');
    expect(err.message).to.contain('SETTING');
    expect(err.details).to.include({ retryAfterSeconds: 50, limit: 3, windowSeconds: 60 });
    limit.consume('b', 11_000);
  });

  it('does not count refused calls, and forgets every key when the window ends', () => {
    const limit = new NodeWindowLimit(1, 1_000, 'too many');
    limit.consume('a', 0);
    for (let i = 0; i < 5; i++) refusal(() => limit.consume('a', 500));
    limit.consume('b', 999);
    expect(limit.keys).to.equal(2);
    limit.consume('a', 1_000);
    expect(limit.keys).to.equal(1);
  });
});
