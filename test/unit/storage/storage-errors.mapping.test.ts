/**
 * Invariant: driver failures that mean "the database cannot serve you now" become STORAGE_UNAVAILABLE, text the
 * database cannot hold becomes VALIDATION_FAILED, and everything else passes through untouched (a unique
 * violation still means something to its caller).
 */
import { expect } from 'chai';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { toStorageError } from '../../../storage/storage-errors.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('toStorageError', function () {
  const unavailable: Array<[string, unknown]> = [
    ['refused socket', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['reset socket', withCode('read ECONNRESET', 'ECONNRESET')],
    ['admin shutdown', withCode('terminating connection due to administrator command', '57P01')],
    ['cannot connect now', withCode('the database system is starting up', '57P03')],
    ['connection exception class', withCode('connection failure', '08006')],
    ['too many connections', withCode('sorry, too many clients already', '53300')],
    ['dropped socket without code', new Error('Connection terminated unexpectedly')],
    ['connection timeout of a server that never answers (pg Client)', new Error('timeout expired')],
    ['pool timeout', Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' })],
    ['every address refused', new AggregateError([withCode('x', 'ECONNREFUSED')], 'all failed')],
  ];
  for (const [label, err] of unavailable) {
    it(`maps ${label} to STORAGE_UNAVAILABLE without leaking the driver error`, function () {
      const mapped = toStorageError(err);
      expect(mapped).to.be.instanceOf(TroupeError);
      expect((mapped as TroupeError).code).to.equal('STORAGE_UNAVAILABLE');
      expect((mapped as TroupeError).retryable).to.equal(true);
    });
  }

  it('maps unstorable text to VALIDATION_FAILED', function () {
    const mapped = toStorageError(withCode('unsupported Unicode escape sequence', '22P05'));
    expect((mapped as TroupeError).code).to.equal('VALIDATION_FAILED');
  });

  it('passes a unique violation, a TroupeError and a plain bug through unchanged', function () {
    const unique = withCode('duplicate key value violates unique constraint', '23505');
    const ours = new TroupeError('STORAGE_STALE_VERSION');
    const bug = new TypeError('x is undefined');
    expect(toStorageError(unique)).to.equal(unique);
    expect(toStorageError(ours)).to.equal(ours);
    expect(toStorageError(bug)).to.equal(bug);
  });
});
