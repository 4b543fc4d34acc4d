// Invariant: a transcript entry's kind is stored as a permanent code and read back as the same word; an unknown code
// is an error, never a wrong kind; text Postgres cannot hold (NUL) is replaced, nothing else is touched.
import { expect } from 'chai';
import { kindCode, kindOfCode, storableText, TRANSCRIPT_KINDS } from '../../../storage/sessions/transcript-kinds.js';
import { cutNotice } from '../../../storage/sessions/transcript.js';

describe('session transcript: kinds and text', () => {
  it('round-trips every kind through its code, and the codes never change', () => {
    expect(TRANSCRIPT_KINDS.map(kindCode)).to.deep.equal([1, 2, 3, 4, 5]);
    for (const kind of TRANSCRIPT_KINDS) expect(kindOfCode(kindCode(kind))).to.equal(kind);
    expect(() => kindOfCode(0)).to.throw(/unknown transcript entry kind/);
    expect(() => kindOfCode(99)).to.throw(/unknown transcript entry kind/);
  });

  it('replaces NUL only', () => {
    expect(storableText('a\u0000b\u0000')).to.equal('a\uFFFDb\uFFFD');
    const untouched = 'tab\tnewline\n😀 \u2028';
    expect(storableText(untouched)).to.equal(untouched);
  });

  it("the cap's notice names the limit and the setting", () => {
    expect(cutNotice(1234)).to.include('1234 bytes').and.include('TROUPE_TRANSCRIPT_MAX_BYTES');
  });
});
