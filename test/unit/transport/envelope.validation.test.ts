/**
 * Invariant: a node trusts nothing it receives until it is a valid v1 envelope. Anything else is reported as
 * malformed (never half-read), a well-formed envelope of another version is a distinct typed error, replies carry
 * TroupeErrors in their wire form, and oversized messages are refused before they reach the broker.
 */
import { expect } from 'chai';
import { TroupeError } from '../../../ops/kernel/errors.js';
import {
  EnvelopeVersionError, MAX_ENVELOPE_BYTES, MalformedEnvelopeError, assertAddress, copyAcrossWire, createEnvelope, decodeEnvelope,
  encodeEnvelope, errorReply, okReply, readReply,
} from '../../../transport/envelope.js';

const ask = () => createEnvelope({ type: 'ask', to: 'session/abc', from: 'node-1', deadline: Date.now() + 1000, payload: { type: 'session.start', n: 'ü' } });
const raw = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('transport envelope', () => {
  it('round-trips an ask', () => {
    const envelope = ask();
    expect(decodeEnvelope(encodeEnvelope(envelope))).to.deep.equal(envelope);
  });

  it('carries an undefined message as null', () => {
    const envelope = createEnvelope({ type: 'tell', to: 'session/abc', from: 'node-1', deadline: 1, payload: undefined });
    expect(decodeEnvelope(encodeEnvelope(envelope)).payload).to.equal(null);
  });

  it('reports a foreign version as EnvelopeVersionError, not as malformed', () => {
    expect(() => decodeEnvelope(raw({ ...ask(), v: 2 }))).to.throw(EnvelopeVersionError).with.property('received', 2);
  });

  const malformed: Array<[string, Buffer]> = [
    ['not JSON', Buffer.from('{nope')],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0x7d])],
    ['an array', raw([1])],
    ['null', raw(null)],
    ['no version', raw({ ...ask(), v: undefined })],
    ['an unknown type', raw({ ...ask(), type: 'shout' })],
    ['an address without kind', raw({ ...ask(), to: 'abc' })],
    ['a node id with spaces', raw({ ...ask(), from: 'node 1' })],
    ['a fractional deadline', raw({ ...ask(), deadline: 1.5 })],
    ['an extra field', raw({ ...ask(), admin: true })],
    ['no payload', raw({ ...ask(), payload: undefined })],
    ['a reply without correlation id', raw({ ...ask(), type: 'reply', to: 'node-2' })],
    ['an oversized body', Buffer.alloc(MAX_ENVELOPE_BYTES + 1, 0x20)],
  ];
  for (const [what, body] of malformed) {
    it(`reports ${what} as malformed`, () => {
      expect(() => decodeEnvelope(body)).to.throw(MalformedEnvelopeError);
    });
  }

  it('carries replies: a value, nothing, or a TroupeError in wire form', () => {
    const reply = (payload: unknown) =>
      readReply(decodeEnvelope(encodeEnvelope(createEnvelope({ type: 'reply', to: 'node-1', from: 'node-2', deadline: 1, correlationId: 'c1', payload }))));
    expect(reply(okReply({ a: 1 }))).to.deep.equal({ v: 1, ok: true, value: { a: 1 } });
    expect(reply(okReply(undefined))).to.deep.equal({ v: 1, ok: true });
    const failed = reply(errorReply(new TroupeError('CONFLICT', 'x'.repeat(10_000), { id: 'a' })));
    expect(failed.ok).to.equal(false);
    if (!failed.ok) {
      expect(failed.error.code).to.equal('CONFLICT');
      expect(failed.error.message).to.have.length(4096);
      expect(failed.error.details).to.deep.equal({ id: 'a' });
    }
  });

  it('reports a malformed reply payload', () => {
    const envelope = createEnvelope({ type: 'reply', to: 'node-1', from: 'node-2', deadline: 1, correlationId: 'c1', payload: { v: 1, ok: false } });
    expect(() => readReply(envelope)).to.throw(MalformedEnvelopeError);
    const foreign = createEnvelope({ type: 'reply', to: 'node-1', from: 'node-2', deadline: 1, correlationId: 'c1', payload: { v: 3, ok: true } });
    expect(() => readReply(foreign)).to.throw(EnvelopeVersionError);
  });

  it('refuses to encode a message over the size limit', () => {
    const big = createEnvelope({ type: 'tell', to: 'session/a', from: 'n', deadline: 1, payload: 'x'.repeat(MAX_ENVELOPE_BYTES) });
    expect(() => encodeEnvelope(big)).to.throw(TroupeError).with.property('code', 'INTERNAL');
  });

  it('copies an in-process message as the wire would: a fresh object, undefined as null, a Date as its text, nothing unserialisable or oversized', () => {
    const message = { type: 'x', at: new Date(0), nested: { list: [1, 'ü'] }, gone: undefined };
    const copy = copyAcrossWire(message);
    expect(copy).to.deep.equal({ type: 'x', at: '1970-01-01T00:00:00.000Z', nested: { list: [1, 'ü'] } });
    expect(copy.nested).not.to.equal(message.nested);
    expect(copyAcrossWire(undefined)).to.equal(null);
    expect(() => copyAcrossWire({ n: 1n })).to.throw(TroupeError).with.property('code', 'INTERNAL');
    // Multi-byte text counts in bytes, as on the wire: a third of the limit in three-byte characters is the limit.
    expect(() => copyAcrossWire('€'.repeat(Math.ceil(MAX_ENVELOPE_BYTES / 3)))).to.throw(TroupeError).with.property('code', 'INTERNAL');
    expect(() => copyAcrossWire('x'.repeat(MAX_ENVELOPE_BYTES))).to.throw(TroupeError).with.property('code', 'INTERNAL');
    expect(copyAcrossWire('€'.repeat(1000))).to.have.length(1000);
  });

  it('accepts addresses of the form kind/id only', () => {
    expect(() => assertAddress('session/ab12')).not.to.throw();
    for (const bad of ['session', '/ab', 'session/', 'session/a b', `session/${'x'.repeat(600)}`]) {
      expect(() => assertAddress(bad), bad).to.throw(TroupeError).with.property('code', 'VALIDATION_FAILED');
    }
  });
});
