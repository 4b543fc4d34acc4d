// Invariant (issue 31): Node 24 and 22 run without a word, Node 20 runs with one line saying it is past its end of life
// and which versions are supported, and anything older is refused with one line.
import { expect } from 'chai';
import { nodeSupport } from '../../../ops/kernel/node-support.js';

describe('supported Node versions', () => {
  it('supports 24 and 22, warns on 20, refuses older', () => {
    expect(nodeSupport('24.22.3')).to.deep.equal({ verdict: 'supported' });
    expect(nodeSupport('22.23.5')).to.deep.equal({ verdict: 'supported' });
    const eol = nodeSupport('20.20.2');
    expect(eol.verdict).to.equal('end-of-life');
    expect(eol.verdict !== 'supported' && eol.line).to.match(/^Node 20\.20\.2 is past its end of life .*Node 24 and 22 \(LTS\)$/);
    const old = nodeSupport('18.20.0');
    expect(old.verdict).to.equal('refused');
    expect(old.verdict !== 'supported' && old.line).to.not.include('\n');
  });
});
