// Invariant: with the garbage collector running, the typed client's deadline and a caller's abort still end a request
// that gets no answer, and aborting a stream's signal ends its reader (Node's fetch follows a Request's signal only
// weakly: a collection used to leave such requests waiting for ever, and a stopped worker or watch never exited).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';

const fixture = fileURLToPath(new URL('./abort-under-gc.fixture.ts', import.meta.url));

describe('typed client: aborts and deadlines survive garbage collection', function () {
  this.timeout(30_000);

  it('ends a request at its deadline, on the caller\'s abort, and a stream read on its signal', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', fixture]);
    const cases = Object.fromEntries(stdout.trim().split('\n').map((l) => JSON.parse(l) as { case: string; outcome: string; ms: number }).map((c) => [c.case, c]));
    expect(cases.deadline?.outcome).to.equal('TroupeUnreachableError');
    expect(cases.deadline?.ms).to.be.below(2500);
    expect(cases['caller abort']?.outcome).to.equal('AbortError');
    expect(cases['stream abort']?.outcome).to.be.oneOf(['ended', 'AbortError']);
    expect(cases['stream abort']?.ms).to.be.below(2500);
  });
});
