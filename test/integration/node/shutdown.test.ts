// Invariant: on SIGTERM a node's /readyz answers 503 from the first moment while it keeps answering requests for
// TROUPE_SHUTDOWN_DELAY_MS, then drains and exits 0; SIGINT skips the delay; and the whole shutdown is bounded by a
// deadline, even when the node's own logger blocks on a stdout nobody reads. The start log and troupe_up say which
// dependency is unreachable.
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { startNodeProcess, stopAll, type NodeProcess } from '../../cluster/processes.js';

const get = (node: NodeProcess, p: string) => fetch(`${node.url}${p}`, { signal: AbortSignal.timeout(2_000) });

describe('node process shutdown and dependency state', function () {
  this.timeout(90_000);
  const dirs: string[] = [];
  const dataDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-shutdown-'));
    dirs.push(dir);
    return dir;
  };
  after(async () => {
    await stopAll(2_000);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const exitOf = (node: NodeProcess) => once(node.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;

  it('SIGTERM: readiness is 503 at once while requests are still served for the delay, then the node exits 0', async () => {
    const node = await startNodeProcess('shutdown-term', { TROUPE_DATA_DIR: dataDir(), TROUPE_SHUTDOWN_DELAY_MS: '2500' });
    expect((await get(node, '/readyz')).status).to.equal(200);
    const exited = exitOf(node);
    const sent = Date.now();
    node.child.kill('SIGTERM');
    // The first probe after the signal already sees the drain.
    let ready = await get(node, '/readyz');
    while (ready.status === 200 && Date.now() - sent < 300) ready = await get(node, '/readyz');
    expect(ready.status, 'readiness turns 503 at the first moment').to.equal(503);
    expect(Date.now() - sent).to.be.below(300);
    expect(await ready.json()).to.deep.include({ ok: false, code: 'SHUTTING_DOWN' });
    // Throughout the delay the node still answers what it is sent.
    let served = 0;
    while (Date.now() - sent < 2_000) {
      const res = await get(node, '/api/openapi.json');
      expect(res.status).to.equal(200);
      await res.arrayBuffer();
      expect((await get(node, '/readyz')).status).to.equal(503);
      served += 1;
    }
    expect(served).to.be.above(3);
    const [code] = await exited;
    expect(code).to.equal(0);
    expect(Date.now() - sent, 'the node waited for the delay before closing').to.be.at.least(2_500);
    expect(node.lines.some((l) => l.includes('shutdown complete'))).to.equal(true);
  });

  it('SIGINT skips the delay', async () => {
    const node = await startNodeProcess('shutdown-int', { TROUPE_DATA_DIR: dataDir(), TROUPE_SHUTDOWN_DELAY_MS: '30000' });
    const exited = exitOf(node);
    const sent = Date.now();
    node.child.kill('SIGINT');
    const [code] = await exited;
    expect(code).to.equal(0);
    expect(Date.now() - sent).to.be.below(10_000);
  });

  it('a shutdown that cannot finish is ended at the deadline with status 1', async () => {
    const node = await startNodeProcess('shutdown-deadline', {
      TROUPE_DATA_DIR: dataDir(), TROUPE_SHUTDOWN_DELAY_MS: '30000', TROUPE_SHUTDOWN_DEADLINE_MS: '1500',
    });
    const exited = exitOf(node);
    const sent = Date.now();
    node.child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).to.equal(1);
    expect(Date.now() - sent).to.be.within(1_400, 6_000);
    expect(node.lines.some((l) => l.includes('shutdown deadline passed'))).to.equal(true);
  });

  it('a node whose logger blocks on an unread stdout during shutdown is still gone by the deadline', async () => {
    const node = await startNodeProcess('shutdown-blocked', {
      TROUPE_DATA_DIR: dataDir(), TROUPE_SHUTDOWN_DELAY_MS: '30000', TROUPE_SHUTDOWN_DEADLINE_MS: '2000', TROUPE_LOG_LEVEL: 'debug',
    });
    const exited = exitOf(node);
    node.child.kill('SIGTERM');
    // Nobody reads the node's stdout any more; every request logs a debug line until the pipe is full and the
    // logger's synchronous write blocks the node's main thread.
    node.child.stdout!.pause();
    const sent = Date.now();
    const flood = Array.from({ length: 3_000 }, () => get(node, '/healthz').then((r) => r.arrayBuffer(), () => undefined));
    const [code, signal] = await exited;
    await Promise.allSettled(flood);
    // The deadline is 2 s; the bound is loose because 3,000 requests on a busy machine take seconds of their own.
    // What fails without the deadline is a node that never exits.
    expect(Date.now() - sent).to.be.below(20_000);
    expect(code === 1 || signal === 'SIGKILL', `exit ${code} ${signal}`).to.equal(true);
  });

  it('names an unreachable dependency in the start log and in troupe_up', async () => {
    const node = await startNodeProcess('deps-down', { TROUPE_DATA_DIR: dataDir(), REDIS_URL: 'redis://127.0.0.1:1' });
    const ready = JSON.parse(node.lines.find((l) => l.includes('troupe node ready'))!) as { dependencies: Record<string, string> };
    expect(ready.dependencies).to.deep.equal({ storage: 'up', transport: 'up', cache: 'down' });
    const warning = node.lines.map((l) => JSON.parse(l) as { level: number; msg: string; dependency?: string })
      .find((l) => l.level === 40 && l.dependency === 'cache');
    expect(warning?.msg).to.match(/cache \(redis\) is unreachable/);
    // The client's own error arrives on its reconnect timer, which may fire after the ready line.
    const redisErrorLogged = async () => {
      for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 50))) {
        if (node.lines.some((l) => l.includes('redis is unreachable'))) return true;
      }
      return false;
    };
    expect(await redisErrorLogged(), 'the Redis error itself is logged').to.equal(true);
    const metrics = await (await get(node, '/metrics')).text();
    expect(metrics).to.match(/troupe_up\{dependency="cache",engine="redis",node="deps-down"\} 0/);
    expect(metrics).to.match(/troupe_up\{dependency="storage",engine="pglite",node="deps-down"\} 1/);
  });
});
