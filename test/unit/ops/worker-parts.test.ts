// Invariant: the worker's small parts do what its contract says: only a line that is exactly {"troupe": {"costUsd":
// N}} with N ≥ 0 is a cost; the kept output is the last 64 KiB cut at a character boundary; backoff waits are drawn
// under a ceiling that doubles from the base to the cap (full jitter); at most N calls run at once; the event-stream
// reader hands each event its data and the stream's last event id, split across chunks or not.
import { expect } from 'chai';
import { costOf } from '../../../ops/cli/worker/agents/command.js';
import { Backoff } from '../../../ops/cli/worker/backoff.js';
import { concurrencyLimit } from '../../../ops/cli/worker/api.js';
import { readEvents } from '../../../ops/cli/worker/sse.js';
import { lastUtf8Bytes } from '../../../storage/sessions/output.js';

describe('troupe worker parts', () => {
  it('reads events with the last event id so far, whatever the chunking', async () => {
    const text = ':ok\n\nevent: ready\ndata: {"orgId":"o"}\n\nid: 2026-11-29T10:00:00.000Z.llm-key\nevent: credential.rotated\r\n'
      + 'data: {"kind":"llm-key"}\n\nevent: later\ndata: plain text\n\nid: bad\0id\ndata: 1\n\n';
    for (const size of [text.length, 7, 1]) {
      const bytes = new TextEncoder().encode(text);
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += size) controller.enqueue(bytes.slice(i, i + size));
          controller.close();
        },
      });
      const seen: unknown[] = [];
      await readEvents(body, (event, data, id) => seen.push([event, data, id]), 5000);
      expect(seen, `chunks of ${size}`).to.deep.equal([
        ['ready', { orgId: 'o' }, undefined],
        ['credential.rotated', { kind: 'llm-key' }, '2026-11-29T10:00:00.000Z.llm-key'],
        ['later', 'plain text', '2026-11-29T10:00:00.000Z.llm-key'],
        // An id holding NUL is ignored (WHATWG).
        ['message', 1, '2026-11-29T10:00:00.000Z.llm-key'],
      ]);
    }
  });

  it('reads the cost line and nothing else', () => {
    expect(costOf('{"troupe": {"costUsd": 0.25}}')).to.equal(0.25);
    expect(costOf('  {"troupe":{"costUsd":3}}  ')).to.equal(3);
    for (const line of ['{"troupe": {"costUsd": -1}}', '{"troupe": {"costUsd": "1"}}', '{"troupe": {"costUsd": 1, "x": 2}}',
      '{"troupe": {"costUsd": 1}, "x": 2}', 'cost {"troupe": {"costUsd": 1}}', '{"troupe": [1]}', 'troupe costUsd', '{"troupe": {"costUsd": 1e999}}']) {
      expect(costOf(line), line).to.equal(undefined);
    }
  });

  it('keeps the last bytes of UTF-8 without cutting a character', () => {
    expect(lastUtf8Bytes('abc', 10)).to.equal('abc');
    expect(lastUtf8Bytes('abcdef', 3)).to.equal('def');
    const kept = lastUtf8Bytes('é'.repeat(10), 5); // 2 bytes each: 5 bytes would split one
    expect(kept).to.equal('éé');
    expect(lastUtf8Bytes('a🙂b', 5)).to.equal('🙂b');
    expect(lastUtf8Bytes('a🙂b', 4)).to.equal('b');
  });

  it('draws each wait under a doubling ceiling, from the base to the cap, and starts over after a success', () => {
    const highest = new Backoff(1000, 30_000, () => 0.999999);
    expect(Array.from({ length: 7 }, () => highest.next())).to.deep.equal([999, 1999, 3999, 7999, 15_999, 29_999, 29_999]);
    const lowest = new Backoff(1000, 30_000, () => 0);
    expect(lowest.next()).to.equal(0);
    highest.reset();
    expect(highest.next()).to.equal(999);
  });

  it('runs at most N calls at once, in order', async () => {
    const inTurn = concurrencyLimit(2);
    let active = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(Array.from({ length: 6 }, (_, i) => inTurn(async () => {
      active++;
      most = Math.max(most, active);
      await new Promise((r) => setTimeout(r, 5));
      order.push(i);
      active--;
    })));
    expect(most).to.equal(2);
    expect(order).to.have.length(6);
  });
});
