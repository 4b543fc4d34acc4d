// Invariant: `npm start` runs the compiled node, and a SIGTERM sent to the `npm start` process alone (as a
// supervisor or container runtime sends it) stops the server: nothing keeps listening after npm has exited.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  server.close();
  return port;
}

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

describe('npm start', function () {
  this.timeout(180_000); // a stale build is compiled first (tsc), which takes tens of seconds on a busy machine

  it('serves from the compiled build and stops when only the npm process gets SIGTERM', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'troupe-npm-start-'));
    const port = await freePort();
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: repoRoot,
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', TROUPE_DATA_DIR: dataDir, TROUPE_SHUTDOWN_DELAY_MS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    npm.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    npm.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    try {
      const ready = await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, 150_000);
      expect(ready, output.join('')).to.equal(true);
      expect(output.join('')).to.contain('troupe node ready');

      npm.kill('SIGTERM');
      const [code] = (await once(npm, 'exit')) as [number | null];
      expect(code, output.join('')).to.equal(0);
      const closed = await waitFor(async () => !(await accepts(port)), 10_000);
      expect(closed, 'the server still listens after npm start exited').to.equal(true);
      expect(output.join('')).to.contain('shutdown complete');
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

async function waitFor(check: () => Promise<boolean>, withinMs: number): Promise<boolean> {
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
