// Invariant (issue 31, part 3): the systemd units in ops/deploy verify with `systemd-analyze verify` where it exists,
// and keep what draining needs: SIGTERM to the main process alone (KillMode=mixed) and a stop timeout above the time a
// drain may take (the worker's default drain of 60 s; the node's default shutdown deadline of 2 + 10 + 10 s).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const deploy = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../ops/deploy');
const units = ['troupe.service', 'troupe-worker.service'];
const setting = (unit: string, key: string): string | undefined =>
  new RegExp(`^${key}=(.*)$`, 'm').exec(readFileSync(path.join(deploy, unit), 'utf8'))?.[1];

describe('systemd units (ops/deploy)', () => {
  it('verify with systemd-analyze', function () {
    if (spawnSync('systemd-analyze', ['--version']).status !== 0) this.skip();
    // It exits 0 on settings it cannot parse and only says so: any word from it is a failure.
    const verified = spawnSync('systemd-analyze', ['verify', '--man=no', ...units.map((u) => path.join(deploy, u))], { encoding: 'utf8' });
    expect(verified.status, verified.stderr).to.equal(0);
    expect(verified.stderr.trim() + verified.stdout.trim()).to.equal('');
  });

  it('stop by draining: SIGTERM to the main process, a stop timeout above the drain', () => {
    for (const unit of units) {
      expect(setting(unit, 'KillMode'), unit).to.equal('mixed');
      expect(setting(unit, 'KillSignal'), unit).to.equal('SIGTERM');
    }
    expect(Number(setting('troupe-worker.service', 'TimeoutStopSec'))).to.be.greaterThan(60);
    expect(Number(setting('troupe.service', 'TimeoutStopSec'))).to.be.greaterThan(22);
  });
});
