import { existsSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { cpuUs } from './harness.js';
import { rssKb, runQueueWaitMs } from './process-readings.js';

/**
 * Where the time and memory go over the measured window of the slow-readers drive (slow-readers.ts): the node's CPU
 * (user + system, from /proc) and this process's, the node's own event-loop delay and GC time (its /metrics, reset
 * at the window's start), this process's event-loop delay, the load average, and the node's RSS.
 */

export interface WindowReadings {
  readonly cpu: { readonly wallMs: number; readonly nodeMs: number; readonly clientMs: number; readonly nodeWaitMs: number };
  readonly nodeLoopDelay: { readonly p99Ms: number; readonly maxMs: number };
  readonly nodeGc: Record<string, { readonly count: number; readonly ms: number }>;
  readonly loadAverage: { readonly start: number[]; readonly end: number[] };
  readonly clientLoopDelayP99Ms: number;
  /** VmRSS of the node, kB, at the window's start and the largest sampled in it. */
  readonly rssKb: { readonly start: number; readonly max: number };
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuMs = (pid: number): number => cpuUs(pid) / 1000;

/** The node's Prometheus text (unauthenticated /metrics); reading it also resets its event-loop delay histogram. */
async function scrape(port: number): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(15_000) });
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith('nodejs_eventloop_lag_') && !line.startsWith('nodejs_gc_duration_seconds_')) continue;
    // Keyed by name and GC kind only: the node adds a `node` label to every series.
    const space = line.lastIndexOf(' ');
    const name = line.slice(0, Math.min(space, line.indexOf('{') >= 0 ? line.indexOf('{') : space));
    const kind = /kind="(\w+)"/.exec(line)?.[1];
    out.set(kind ? `${name}{kind="${kind}"}` : name, Number(line.slice(space + 1)));
  }
  return out;
}

/** The node's live heap plus external memory after a full collection (gc-on-signal.mjs), kB. */
export async function settledLiveKb(pid: number, memoryFile: string): Promise<number> {
  rmSync(memoryFile, { force: true });
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0; !existsSync(memoryFile) && waited < 10_000; waited += 50) await sleep(50);
  await sleep(50);
  const usage = JSON.parse(readFileSync(memoryFile, 'utf8')) as { heapUsed: number; external: number };
  return Math.round((usage.heapUsed + usage.external) / 1024);
}

/** GC counts and time by kind over the window, from two scrapes of the node's /metrics. */
function gcBetween(start: Map<string, number>, end: Map<string, number>): WindowReadings['nodeGc'] {
  const nodeGc: WindowReadings['nodeGc'] = {};
  for (const [key, value] of end) {
    const kind = /^nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"/.exec(key);
    if (!kind) continue;
    const g = (nodeGc[kind[2]!] ??= { count: 0, ms: 0 }) as { count: number; ms: number };
    const delta = value - (start.get(key) ?? 0);
    if (kind[1] === 'count') g.count = delta; else g.ms = Math.round(delta * 10_000) / 10;
  }
  return nodeGc;
}

export class MeasuredWindow {
  private rssMax: number;

  private constructor(
    private readonly pid: number,
    private readonly port: number,
    private readonly rssStart: number,
    private readonly loopDelay: ReturnType<typeof monitorEventLoopDelay>,
    private readonly loadStart: number[],
    private readonly metricsStart: Map<string, number>,
    private readonly from: number,
    private readonly cpuStart: { node: number; client: NodeJS.CpuUsage; wait: number },
  ) {
    this.rssMax = rssStart;
  }

  /** Takes the starting readings of node `pid` (listening on `port`); the window runs from here. */
  static async open(pid: number, port: number): Promise<MeasuredWindow> {
    const rssStart = rssKb(pid);
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const loadStart = os.loadavg();
    const metricsStart = await scrape(port);
    const from = now();
    const cpuStart = { node: cpuMs(pid), client: process.cpuUsage(), wait: runQueueWaitMs(pid) };
    return new MeasuredWindow(pid, port, rssStart, loopDelay, loadStart, metricsStart, from, cpuStart);
  }

  elapsedMs(): number {
    return now() - this.from;
  }

  /** The node's RSS now, kB, kept if it is the largest yet. */
  sampleRss(): number {
    const rss = rssKb(this.pid);
    this.rssMax = Math.max(this.rssMax, rss);
    return rss;
  }

  async close(): Promise<WindowReadings> {
    this.loopDelay.disable();
    const { pid, cpuStart } = this;
    const clientCpu = process.cpuUsage(cpuStart.client);
    const cpu = {
      wallMs: Math.round(now() - this.from), nodeMs: cpuMs(pid) - cpuStart.node,
      clientMs: Math.round((clientCpu.user + clientCpu.system) / 1000), nodeWaitMs: Math.round(runQueueWaitMs(pid) - cpuStart.wait),
    };
    const metricsEnd = await scrape(this.port);
    return {
      cpu, nodeGc: gcBetween(this.metricsStart, metricsEnd), loadAverage: { start: this.loadStart, end: os.loadavg() },
      nodeLoopDelay: {
        p99Ms: Math.round((metricsEnd.get('nodejs_eventloop_lag_p99_seconds') ?? NaN) * 10_000) / 10,
        maxMs: Math.round((metricsEnd.get('nodejs_eventloop_lag_max_seconds') ?? NaN) * 10_000) / 10,
      },
      clientLoopDelayP99Ms: Math.round(this.loopDelay.percentile(99) / 1e5) / 10,
      rssKb: { start: this.rssStart, max: this.rssMax },
    };
  }
}
