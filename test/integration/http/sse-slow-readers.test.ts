// Invariant (issue 20, slow SSE readers; the full size is `npx tsx ops/bench/sse-slow-readers.ts`): a real node
// process with 100 subscribers of one interview stream on raw sockets, one of which stops reading once the stream
// is open, while a worker posts 32 KiB frames ten times a second: every reading subscriber gets every frame and stays
// connected, the stalled one is dropped by the node (its log says why) holding at most 1 MiB for it, and the node's
// RSS stays within 64 MB of where it was once the streams were open.
import { expect } from 'chai';
import { runSlowReaders } from '../../../ops/bench/slow-readers.js';

describe('slow SSE readers: a real node, 100 subscribers, one never reading', function () {
  this.timeout(90_000);

  it('keeps serving the readers and drops the stalled one, holding at most 1 MiB for it', async () => {
    // ~320 KB/s a stream: the stalled socket fills its kernel buffers (~4 MiB on loopback) in about 13 s.
    const r = await runSlowReaders({ subscribers: 100, stalled: 1, framesPerSecond: 10, frameBytes: 32 * 1024, seconds: 16, warmupSeconds: 1 });
    console.log(`      readers: delay p50 ${r.latency.p50Ms} ms p99 ${r.latency.p99Ms} ms (client loop delay p99 ${r.clientLoopDelayP99Ms} ms); `
      + `stalled: ${JSON.stringify(r.stalled)}; node RSS ${r.rssKb.start} → max ${r.rssKb.max} kB`);
    expect(r.publishFailures).to.equal(0);
    expect(r.framesPublished).to.be.above(150);
    expect(r.readersClosed, 'reading subscribers cut off').to.equal(0);
    expect(r.framesMissed, 'frames a reading subscriber never got').to.equal(0);
    // The goal is 250 ms (the bench); this shared-machine test only catches readers held up behind a stalled one.
    expect(r.latency.p99Ms).to.be.below(1_000);
    const [stalled] = r.stalled;
    expect(stalled!.droppedAfterMs, 'the stalled reader was dropped').to.not.equal(null);
    expect(stalled!.unsentBytes!).to.be.at.most(1024 * 1024);
    expect(stalled!.stalledMs!).to.be.at.most(30_000);
    // RSS, not the live heap: the embedded engine's Wasm memory counts as external and swings by hundreds of MB.
    expect(r.rssKb.max - r.rssKb.start, 'node RSS grew while the stalled reader filled').to.be.below(64 * 1024);
  });
});
