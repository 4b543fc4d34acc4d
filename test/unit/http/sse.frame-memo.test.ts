// Invariant: a fan-out formats an event's frame once per turn, yet a stream never sends a stale frame: a payload
// changed after the turn, or a different id or event name, is formatted afresh.
import { expect } from 'chai';
import { formatSseEvent, sseFrame } from '../../../http/sse.js';

describe('SSE frame memo', () => {
  it('reuses the frame of the same event object within one turn', () => {
    const data = { kind: 'github-token', value: 'v1' };
    const first = sseFrame({ id: '1', event: 'credential.rotated', data });
    expect(sseFrame({ id: '1', event: 'credential.rotated', data })).to.equal(first);
    expect(first.toString()).to.equal(formatSseEvent({ id: '1', event: 'credential.rotated', data }));
  });

  it('formats afresh for another id, event name or object', () => {
    const data = { n: 1 };
    const a = sseFrame({ id: '1', event: 'e', data });
    expect(sseFrame({ id: '2', event: 'e', data }).toString()).to.include('id: 2');
    expect(sseFrame({ id: '1', event: 'f', data })).to.not.equal(a);
    expect(sseFrame({ id: '1', event: 'e', data: { n: 2 } }).toString()).to.include('"n":2');
  });

  it('drops the memo at the end of the turn, so a mutated payload is not sent stale', async () => {
    const data = { n: 1 };
    sseFrame({ id: '1', event: 'e', data });
    await Promise.resolve();
    data.n = 2;
    expect(sseFrame({ id: '1', event: 'e', data }).toString()).to.include('"n":2');
  });
});
