// Invariant: whatever a handler throws reaches the client as {error, code} with the right status: our errors keep
// theirs, a raw database error is classified (down → 503, unstorable text → 400), and anything else is a bare 500
// that reveals nothing about our insides.
import { expect } from 'chai';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { toErrorReply } from '../../../http/errors.js';

const driverError = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('error mapping at the HTTP edge', () => {
  const log = silentLogger();

  it('keeps a TroupeError status, message and details', () => {
    const reply = toErrorReply(new TroupeError('NOT_FOUND', 'no such team', { id: 'x' }), log);
    expect(reply).to.deep.equal({ status: 404, body: { error: 'no such team', code: 'NOT_FOUND', details: { id: 'x' } } });
  });

  it('answers a NUL byte Postgres refused to compare as 400, not 500', () => {
    const reply = toErrorReply(driverError('invalid byte sequence for encoding "UTF8": 0x00', '22021'), log);
    expect(reply.status).to.equal(400);
    expect(reply.body.code).to.equal('VALIDATION_FAILED');
  });

  it('answers a database that refused the connection as 503', () => {
    const reply = toErrorReply(driverError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'), log);
    expect(reply.status).to.equal(503);
    expect(reply.body.code).to.equal('STORAGE_UNAVAILABLE');
  });

  it('answers anything else as a bare 500 without the original message', () => {
    const reply = toErrorReply(new Error('select * from secrets failed at /srv/app.ts:12'), log);
    expect(reply).to.deep.equal({ status: 500, body: { error: 'internal error', code: 'INTERNAL' } });
  });
});
