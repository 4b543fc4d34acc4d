// Invariant: every error code maps to one HTTP status and retryability, 5xx only for dependency failures and our own
// bugs, and an error survives the trip across the broker with its code intact while an unknown code is not trusted.
import { expect } from 'chai';
import { errorRegistry, fromWire, TroupeError, type ErrorCode } from '../../../ops/kernel/errors.js';

describe('error registry', () => {
  const codes = Object.keys(errorRegistry) as ErrorCode[];

  it('names every code in SCREAMING_SNAKE with a 4xx or 5xx status', () => {
    for (const code of codes) {
      expect(code).to.match(/^[A-Z][A-Z0-9_]+$/);
      expect(errorRegistry[code].status).to.be.within(400, 599);
    }
  });

  it('answers 5xx only for failing dependencies (502 upstream, 503 down: both retryable) and internal bugs (500)', () => {
    for (const code of codes) {
      const { status, retryable } = errorRegistry[code];
      if (status >= 500) expect(status === 502 || status === 503 ? retryable : code === 'INTERNAL', code).to.equal(true);
    }
  });

  it('round-trips through the wire form with code, message and details', () => {
    const original = new TroupeError('VALIDATION_FAILED', 'name is required', { field: '/name' });
    const rebuilt = fromWire(JSON.parse(JSON.stringify(original.toWire())));
    expect(rebuilt).to.be.instanceOf(TroupeError);
    expect(rebuilt.code).to.equal('VALIDATION_FAILED');
    expect(rebuilt.status).to.equal(400);
    expect(rebuilt.message).to.equal('name is required');
    expect(rebuilt.details).to.deep.equal({ field: '/name' });
  });

  it('turns a code it does not know into INTERNAL instead of trusting the sender', () => {
    expect(fromWire({ code: 'MADE_UP', message: 'x' }).code).to.equal('INTERNAL');
    expect(fromWire({ code: 'toString', message: 'x' }).code).to.equal('INTERNAL');
  });
});
