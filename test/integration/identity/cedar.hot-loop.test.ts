/**
 * Regression: Node 20 aborted the process ("Fatal error … unreachable code") in about half of the runs of a hot
 * Cedar authorisation loop, when a deoptimisation landed in an inlined JS→Wasm call (see ops/kernel/wasm-inlining-off.ts).
 * Two such loops in child processes must both finish; without the fix at least one crashes three times in four.
 */
import { spawn } from 'node:child_process';
import { expect } from 'chai';

function runHotLoop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'ops/bench/authorizer.ts', '--decisions', '3000'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, output }));
  });
}

describe('Cedar under a hot authorisation loop', () => {
  it('decides thousands of times in a row without the runtime aborting', async function () {
    this.timeout(60_000);
    const runs = await Promise.all([runHotLoop(), runHotLoop()]);
    for (const run of runs) {
      expect(run.output, run.output).not.to.include('Fatal error');
      expect({ code: run.code, signal: run.signal }).to.deep.equal({ code: 0, signal: null });
      expect(run.output).to.match(/memoised, µs\/decision\s+\|\s+\d/);
    }
  });
});
