// Invariant (decision 0054, 2026-11-28): frames reaching one stream in the same event-loop turn leave in one corked
// write at the turn's end (one send() instead of one each), in order, never more than 16 KiB held; a stream that
// writes once a turn writes at once; frames held when the stream closes go out before its end; a write refused at the
// turn's end leaves the rest queued behind it, counted against the bound.
import { expect } from 'chai';
import { UwsSseStream, defaultSseOptions } from '../../../http/sse.js';
import type { UwsResponse } from '../../../http/uws.js';
import type { HeartbeatWheel } from '../../../http/sse-heartbeats.js';
import type { Logger } from '../../../ops/kernel/logger.js';

class FakeResponse {
  corks = 0;
  /** Writes, grouped by the cork they were made in. */
  batches: string[][] = [];
  ended = false;
  /** Writes accepted before the socket reports backpressure. */
  accept = Infinity;
  private inCork = false;
  cork(fn: () => void): this {
    this.corks++;
    this.batches.push([]);
    this.inCork = true;
    try { fn(); } finally { this.inCork = false; }
    return this;
  }
  write(chunk: Buffer): boolean {
    if (!this.inCork) throw new Error('write outside a cork');
    this.batches.at(-1)!.push(chunk.toString());
    return this.accept-- > 0;
  }
  end(): this { this.ended = true; this.batches.at(-1)!.push('<end>'); return this; }
  onWritable(): this { return this; }
  close(): this { return this; }
}

const wheel = { add() {}, remove() {} } as unknown as HeartbeatWheel;
const log = { error() {} } as unknown as Logger;
const turnEnd = () => new Promise((r) => setImmediate(r));
const open = (res: FakeResponse, options = defaultSseOptions) => new UwsSseStream(res as unknown as UwsResponse, undefined, options, () => {}, log, wheel);
const text = (res: FakeResponse) => res.batches.flat().join('');

describe('SSE: frames of one turn leave together', () => {
  it('writes the first frame at once and the rest of the turn in one corked write at its end, in order', async () => {
    const res = new FakeResponse();
    const s = open(res);
    for (let n = 1; n <= 5; n++) s.send({ data: `f${n}` });
    expect(res.corks).to.equal(1);
    expect(s.unsentBytes).to.be.above(0);
    await turnEnd();
    expect(res.corks).to.equal(2);
    expect(res.batches[1]).to.have.length(4);
    expect(text(res)).to.equal('data: f1\n\ndata: f2\n\ndata: f3\n\ndata: f4\n\ndata: f5\n\n');
    expect(s.unsentBytes).to.equal(0);
  });

  it('writes at once a stream that hears once a turn', async () => {
    const res = new FakeResponse();
    const s = open(res);
    s.send({ data: 'a' });
    await turnEnd();
    await turnEnd();
    s.send({ data: 'b' });
    expect(res.corks).to.equal(2);
    expect(text(res)).to.equal('data: a\n\ndata: b\n\n');
  });

  it('holds at most 16 KiB: a frame that would pass it flushes what is held, then goes, in order', () => {
    const res = new FakeResponse();
    const s = open(res);
    const big = 'x'.repeat(6 * 1024);
    for (let n = 0; n < 5; n++) s.send({ data: `${n}${big}` });
    // 1 at once; 2 and 3 held (12 KiB); 4 would pass 16 KiB: 2 and 3 flushed, 4 written; 5 held.
    expect(res.corks).to.equal(3);
    expect(s.unsentBytes).to.be.within(6 * 1024, 7 * 1024);
    expect(res.batches.flat().map((w) => w[6])).to.deep.equal(['0', '1', '2', '3']);
  });

  it('sends held frames before the end when the stream closes', () => {
    const res = new FakeResponse();
    const s = open(res);
    s.send({ data: 'a' });
    s.send({ data: 'b' });
    s.close();
    expect(text(res)).to.equal('data: a\n\ndata: b\n\n<end>');
  });

  it('queues what follows a write refused at the turn\'s end, and counts it against the bound', async () => {
    const res = new FakeResponse();
    const s = open(res, { ...defaultSseOptions, maxBufferedBytes: 64 });
    res.accept = 2; // the first frame and the first held one are taken, the second held one is refused
    for (let n = 1; n <= 4; n++) s.send({ data: `f${n}` });
    await turnEnd();
    expect(res.batches[1]).to.have.length(2);
    expect(s.unsentBytes).to.equal('data: f3\n\n'.length + 'data: f4\n\n'.length);
    // Behind the refusal, the next frames queue until the bound is passed, then the client is cut off.
    for (let n = 0; n < 10 && !s.closed; n++) s.send({ data: `g${n}` });
    expect(s.closed).to.equal(true);
    expect(s.cutOff?.reason).to.equal('backlog');
  });
});
