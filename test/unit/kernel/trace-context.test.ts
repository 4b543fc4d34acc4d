// Invariant: every request served gets a W3C traceparent whose span id is new, whose trace id is the caller's when the
// caller sent a valid one and new otherwise, and ids stay unique past the refill of the random pool they come from.
import { expect } from 'chai';
import { isTraceparent, traceparentFor } from '../../../ops/kernel/trace-context.js';

describe('trace context', () => {
  it('starts a valid trace for a request without one, or with a malformed or all-zero one', () => {
    for (const header of [undefined, '', 'nonsense', `00-${'0'.repeat(32)}-${'a'.repeat(16)}-01`, `00-${'a'.repeat(32)}-${'0'.repeat(16)}-01`]) {
      const traceparent = traceparentFor(header);
      expect(isTraceparent(traceparent), `${header} -> ${traceparent}`).to.equal(true);
      expect(traceparent.slice(3, 35)).to.not.equal('a'.repeat(32));
    }
  });

  it("keeps a caller's trace id and flags, with a span of its own", () => {
    const caller = `00-${'4bf92f3577b34da6a3ce929d0e0e4736'}-${'00f067aa0ba902b7'}-00`;
    const ours = traceparentFor(` ${caller.toUpperCase()} `);
    expect(ours.slice(0, 36)).to.equal(caller.slice(0, 36));
    expect(ours.endsWith('-00')).to.equal(true);
    expect(ours.slice(36, 52)).to.not.equal('00f067aa0ba902b7');
  });

  it('gives distinct trace and span ids across many requests, past a refill of the random pool', () => {
    const traces = new Set<string>();
    const spans = new Set<string>();
    const n = 2_000; // 24 bytes each: about twelve refills of a 4 KiB pool
    for (let i = 0; i < n; i += 1) {
      const t = traceparentFor(undefined);
      traces.add(t.slice(3, 35));
      spans.add(t.slice(36, 52));
    }
    expect(traces.size).to.equal(n);
    expect(spans.size).to.equal(n);
  });
});
