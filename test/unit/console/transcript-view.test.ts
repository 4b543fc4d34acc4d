// Invariant: the console's transcript window shows entries in seq order, each once: live entries already shown (a
// resumed stream) are ignored, an earlier page goes in front without overlapping, and past MAX_SHOWN the oldest
// leave the page (and are a page back away: `before` moves with them).
import { expect } from 'chai';
import type { TranscriptEntry } from '../../../http/console/app/api-types.js';
import {
  appendLive, earlierFrom, endsSession, MAX_SHOWN, PAGE_SIZE, prependPage, windowOf,
} from '../../../http/console/app/transcript-view.js';

const entry = (seq: number, over: Partial<TranscriptEntry> = {}): TranscriptEntry => ({
  seq, at: new Date(seq * 1000).toISOString(), kind: 'output', text: `line ${seq}`, run: 1, ...over,
});
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => entry(from + i));
const seqs = (entries: readonly TranscriptEntry[]) => entries.map((e) => e.seq);

describe('console: the transcript window', () => {
  it('appends live entries after the last one shown, ignoring those already shown', () => {
    let w = windowOf(range(301, 500), 300);
    w = appendLive(w, [entry(499), entry(500), entry(501)]);
    w = appendLive(w, [entry(501), entry(502)]);
    expect(seqs(w.entries)).to.deep.equal([...seqs(range(301, 502))]);
    expect(w).to.include({ before: 300, last: 502 });
  });

  it('puts an earlier page in front, and the page before it starts at most PAGE_SIZE back', () => {
    let w = windowOf(range(301, 500), 300);
    const from = earlierFrom(w);
    expect(from).to.equal(300 - PAGE_SIZE);
    // A page that overlaps what is shown (read while entries moved) adds only what comes before.
    w = prependPage(w, range(from + 1, 305), from);
    expect(seqs(w.entries)).to.deep.equal(seqs(range(101, 500)));
    expect(w.before).to.equal(100);
    expect(earlierFrom(windowOf(range(51, 60), 50))).to.equal(0);
  });

  it('keeps at most MAX_SHOWN entries, dropping the oldest and moving `before` past them', () => {
    let w = windowOf(range(1, 200), 0);
    for (let s = 201; s <= MAX_SHOWN + 500; s += 100) w = appendLive(w, range(s, s + 99));
    expect(w.entries).to.have.length(MAX_SHOWN);
    expect(w.entries[0]!.seq).to.equal(w.before + 1);
    expect(w.last).to.equal(MAX_SHOWN + 500);
    expect(seqs(w.entries)).to.deep.equal(seqs(range(w.before + 1, w.last)));
  });

  it('an empty transcript starts at its start, and live entries fill it', () => {
    const w = appendLive(windowOf([], 0), [entry(1, { kind: 'status', text: 'absent → pending', status: 'pending' })]);
    expect(w).to.include({ before: 0, last: 1 });
  });

  it('knows a terminal status entry ends the session', () => {
    expect(endsSession(entry(1, { kind: 'status', status: 'completed' }))).to.equal(true);
    expect(endsSession(entry(1, { kind: 'status', status: 'running' }))).to.equal(false);
    expect(endsSession(entry(1, { kind: 'output', text: 'completed' }))).to.equal(false);
  });
});
