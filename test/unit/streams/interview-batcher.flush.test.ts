// Invariant: interview tokens leave a node as frames of at most 20 tokens, in arrival order, and no token waits
// more than 100 ms after it arrived; the channel fan-out replays exactly the events after a Last-Event-ID and says
// so when that id is no longer remembered, with its memory bounded by ring and channel caps.
import { expect } from 'chai';
import sinon from 'sinon';
import { InterviewBatcher, MAX_FRAME_DELAY_MS } from '../../../actors/services/interview/batcher.js';
import { ChannelFanout } from '../../../actors/services/fleet/channel-fanout.js';

describe('interview batcher', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => { clock = sinon.useFakeTimers(); });
  afterEach(() => clock.restore());

  const collect = () => {
    const frames: { topic: string; tokens: readonly string[]; seq: number; id: string }[] = [];
    const b = new InterviewBatcher(async (topic, f) => { frames.push({ topic, tokens: f.tokens, seq: f.seq, id: f.id }); }, () => Date.now(), () => {});
    return { b, frames };
  };

  it('flushes at once when 20 tokens wait, and the rest within 100 ms', async () => {
    const { b, frames } = collect();
    b.add('org1', 'iv', Array.from({ length: 45 }, (_, i) => String(i)));
    expect(frames.map((f) => f.tokens.length)).to.deep.equal([20, 20]);
    await clock.tickAsync(MAX_FRAME_DELAY_MS - 1);
    expect(frames).to.have.length(2);
    await clock.tickAsync(1);
    expect(frames.map((f) => f.tokens.length)).to.deep.equal([20, 20, 5]);
    expect(frames.flatMap((f) => f.tokens)).to.deep.equal(Array.from({ length: 45 }, (_, i) => String(i)));
    expect(frames.map((f) => f.seq)).to.deep.equal([1, 2, 3]);
    expect(frames[0]!.topic).to.equal('org.org1.interview.iv.frame');
  });

  it('counts the 100 ms from the first waiting token, not the last', async () => {
    const { b, frames } = collect();
    b.add('o', 'iv', ['a']);
    await clock.tickAsync(60);
    b.add('o', 'iv', ['b']);
    await clock.tickAsync(40);
    expect(frames.map((f) => f.tokens)).to.deep.equal([['a', 'b']]);
  });

  it('at shutdown publishes the tokens still waiting and waits until the transport confirmed them', async () => {
    const confirmed: string[][] = [];
    let release: () => void = () => undefined;
    const slow = new Promise<void>((resolve) => { release = resolve; });
    const b = new InterviewBatcher(async (_topic, f) => { await slow; confirmed.push([...f.tokens]); }, () => Date.now(), () => {});
    b.add('o', 'iv', ['last', 'words']);
    let stopped = false;
    const stopping = b.stop().then(() => { stopped = true; });
    await clock.tickAsync(0);
    expect(stopped, 'stop waits for the frame on its way').to.equal(false);
    release();
    await stopping;
    expect(confirmed).to.deep.equal([['last', 'words']]);
  });

  it('keeps interviews and orgs apart, with unique frame ids', async () => {
    const { b, frames } = collect();
    b.add('o1', 'iv', ['x']);
    b.add('o2', 'iv', ['y']);
    await clock.tickAsync(MAX_FRAME_DELAY_MS);
    expect(frames.map((f) => [f.topic, f.tokens[0]])).to.deep.equal([['org.o1.interview.iv.frame', 'x'], ['org.o2.interview.iv.frame', 'y']]);
    expect(new Set(frames.map((f) => f.id)).size).to.equal(2);
  });
});

describe('channel fan-out', () => {
  it('replays after Last-Event-ID, reports a forgotten id, and bounds ring and channels', () => {
    const f = new ChannelFanout<number>({ ringSize: 3, maxChannels: 2 });
    for (let i = 1; i <= 5; i++) f.deliver('a', { id: `e${i}`, data: i });
    const seen: number[] = [];
    const resumed = f.subscribe('a', (e) => seen.push(e.data), 'e3');
    expect(resumed.found).to.equal(true);
    expect(resumed.replay.map((e) => e.data)).to.deep.equal([4, 5]);
    expect(f.subscribe('a', () => {}, 'e1').found, 'e1 fell out of the ring').to.equal(false);
    f.deliver('a', { id: 'e6', data: 6 });
    expect(seen).to.deep.equal([6]);
    f.deliver('b', { id: 'b1', data: 1 });
    f.deliver('c', { id: 'c1', data: 1 });
    // 'b' had no listener and was the coldest: forgotten; 'a' is watched and kept.
    expect(f.subscribe('b', () => {}, 'b1').found).to.equal(false);
    expect(f.subscribe('a', () => {}, 'e6').found).to.equal(true);
    resumed.unsubscribe();
    f.deliver('a', { id: 'e7', data: 7 });
    expect(seen).to.deep.equal([6]);
  });
});

describe('channel fan-out: history bounded in bytes (issue 30)', () => {
  const sized = (extra: Partial<ConstructorParameters<typeof ChannelFanout<number>>[0]> = {}) =>
    new ChannelFanout<number>({ ringSize: 100, maxChannels: 100, sizeOf: (n) => n, ...extra });
  const EVENT = 200; // the fan-out's fixed cost per event, beside what sizeOf says

  it("keeps a channel's history under its byte bound, oldest out first", () => {
    const f = sized({ ringBytes: 3 * (1000 + EVENT) });
    for (let i = 1; i <= 5; i++) f.deliver('o1/a', { id: `e${i}`, data: 1000 });
    expect(f.usage().bytes).to.equal(3 * (1000 + EVENT));
    expect(f.subscribe('o1/a', () => {}, 'e2').found).to.equal(false);
    expect(f.subscribe('o1/a', () => {}, 'e3').replay.map((e) => e.id)).to.deep.equal(['e4', 'e5']);
  });

  it('takes an org over its share from its own coldest channels, and leaves other orgs alone', () => {
    const f = sized({ orgBytes: 10_000 });
    f.deliver('victim/x', { id: 'v1', data: 5000 });
    for (let i = 0; i < 50; i++) f.deliver(`noisy/ch${i}`, { id: `n${i}`, data: 3000 });
    expect(f.usage('noisy').bytes).to.be.at.most(10_000);
    expect(f.usage('victim').bytes).to.equal(5000 + EVENT);
    expect(f.subscribe('victim/x', () => {}, 'v1').found).to.equal(true);
    // The noisy org's newest event is still there to resume after; its oldest are gone.
    expect(f.subscribe('noisy/ch49', () => {}, 'n49').found).to.equal(true);
    expect(f.subscribe('noisy/ch0', () => {}, 'n0').found).to.equal(false);
  });

  it('bounds the whole history and the channels of one org', () => {
    const f = sized({ totalBytes: 20_000, maxChannelsPerOrg: 3 });
    for (let i = 0; i < 30; i++) f.deliver(`o${i % 5}/c${i}`, { id: `e${i}`, data: 1000 });
    expect(f.usage().bytes).to.be.at.most(20_000);
    for (let o = 0; o < 5; o++) expect(f.usage(`o${o}`).channels).to.be.at.most(3);
  });

  it('ends a history at an event too large to keep, so a resumption cannot skip it silently', () => {
    const f = sized({ ringBytes: 5000 });
    f.deliver('o/a', { id: 'small', data: 100 });
    const seen: number[] = [];
    f.subscribe('o/a', (e) => seen.push(e.data));
    f.deliver('o/a', { id: 'huge', data: 10_000 });
    expect(seen, 'a live listener still gets it').to.deep.equal([10_000]);
    expect(f.subscribe('o/a', () => {}, 'small').found).to.equal(false);
    expect(f.usage('o').bytes).to.equal(0);
  });

  it('counts bytes back to zero when histories are lost or forgotten', () => {
    const f = sized({ ringBytes: 10_000 });
    f.deliver('o/a', { id: 'a1', data: 500 });
    f.deliver('o/b', { id: 'b1', data: 500 });
    f.lost('o/a');
    expect(f.usage().bytes).to.equal(500 + EVENT);
    const g = sized({ maxChannels: 1 });
    g.deliver('o/a', { id: 'a1', data: 500 });
    g.deliver('o/b', { id: 'b1', data: 500 });
    expect(g.usage()).to.deep.equal({ bytes: 500 + EVENT, channels: 1 });
  });
});
