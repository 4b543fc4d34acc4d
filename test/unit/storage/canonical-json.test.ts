/**
 * Invariant: canonicalJson gives equal values one text, whatever their key order, and that text is valid JSON for
 * the same value; the audit chain's hashes depend on it.
 */
import { expect } from 'chai';
import { canonicalJson } from '../../../ops/kernel/canonical-json.js';

describe('canonicalJson', function () {
  it('sorts keys at every depth and adds no whitespace', function () {
    const a = { b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } };
    const b = { a: { c: 'x', d: [3, { y: 2, z: 1 }] }, b: 1 };
    expect(canonicalJson(a)).to.equal('{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson(b)).to.equal(canonicalJson(a));
  });

  it('parses back to the same value, including escapes and non-ASCII', function () {
    const value = { 'quote"key': 'line\nbreak', emoji: '🙂', nested: [null, true, -0.5, 1e21] };
    expect(JSON.parse(canonicalJson(value))).to.deep.equal(value);
  });

  it('follows JSON.stringify for undefined, functions and dates', function () {
    const when = new Date('2026-01-02T03:04:05.678Z');
    expect(canonicalJson({ a: undefined, f: () => 1, at: when, list: [undefined] })).to.equal('{"at":"2026-01-02T03:04:05.678Z","list":[null]}');
  });

  it('orders keys by code unit, so the order does not depend on locale', function () {
    expect(canonicalJson({ é: 1, z: 2, A: 3, a: 4 })).to.equal('{"A":3,"a":4,"z":2,"é":1}');
  });
});
