import path from 'node:path';
import { median, printTable } from './harness.js';
import type { RoundResult } from './sse-measure.js';

/** What the SSE bench (sse.ts) prints: a line per round, then the table of servers and the G6 goals. */

export function roundLine(round: number, rounds: number, name: string, r: RoundResult): string {
  return `round ${round}/${rounds} ${name}: ${r.opened} streams, ${r.perStreamKb.toFixed(2)} KB/stream (RSS ${r.rssPerStreamKb.toFixed(2)}, RSS less unused heap ${r.residentPerStreamKb.toFixed(2)}, live ${r.livePerStreamKb.toFixed(2)}, heap reserved ${r.heapTotalPerStreamKb.toFixed(2)}), `
    + `${Math.round(r.eventsPerSecond)} events/s, latency p50 ${r.p50Ms.toFixed(1)} ms p99 ${r.p99Ms.toFixed(1)} ms, `
    + `one daemon's stream p50 ${r.loneP50Ms.toFixed(1)} ms p99 ${r.loneP99Ms.toFixed(1)} ms, lost ${r.lost}\n`;
}

export function printServers(results: ReadonlyMap<string, RoundResult[]>): void {
  printTable([...results].map(([name, rs]) => ({
    config: name,
    'KB/stream': median(rs.map((r) => r.perStreamKb)),
    'RSS KB/stream': median(rs.map((r) => r.rssPerStreamKb)),
    'RSS less unused heap': median(rs.map((r) => r.residentPerStreamKb)),
    'live KB/stream': median(rs.map((r) => r.livePerStreamKb)),
    'events/s (median)': Math.round(median(rs.map((r) => r.eventsPerSecond))),
    'p50 ms': median(rs.map((r) => r.p50Ms)),
    'p99 ms': median(rs.map((r) => r.p99Ms)),
    'one stream p50 ms': median(rs.map((r) => r.loneP50Ms)),
    'one stream p99 ms': median(rs.map((r) => r.loneP99Ms)),
    lost: rs.reduce((n, r) => n + r.lost, 0),
  })));
}

/** Prints the G6 goals against the node's rounds (`rateRatios`: its event rate over the ceiling's, per round); answers whether all are met. */
export function printGoals(mine: readonly RoundResult[], rateRatios: readonly number[], plan: { streamCount: number; orgCount: number }): boolean {
  const { streamCount, orgCount } = plan;
  const goals = [
    { goal: `G6 streams opened (${streamCount})`, value: Math.min(...mine.map((r) => r.opened)), ok: (v: number) => v >= 10_000 && v >= streamCount, want: '>= 10000' },
    { goal: 'G6 memory per stream, KB', value: median(mine.map((r) => r.perStreamKb)), ok: (v: number) => v <= 4, want: '<= 4' },
    { goal: 'G6 event rate / ceiling', value: median(rateRatios), ok: (v: number) => v >= 0.5, want: '>= 0.50' },
    { goal: `G6 rotate -> stream p99, ms (${Math.round(streamCount / orgCount)} streams an org)`, value: median(mine.map((r) => r.p99Ms)), ok: (v: number) => v <= 50, want: '<= 50' },
    { goal: 'G6 rotate -> stream p99, ms (one daemon\'s stream)', value: median(mine.map((r) => r.loneP99Ms)), ok: (v: number) => v <= 50, want: '<= 50' },
    { goal: 'G6 frames lost or streams cut', value: mine.reduce((n, r) => n + r.lost, 0), ok: (v: number) => v === 0, want: '0' },
  ];
  console.log('');
  printTable(goals.map((g) => ({ goal: g.goal, value: g.value, wanted: g.want, met: g.ok(g.value) ? 'yes' : 'NO' })));
  return goals.every((g) => g.ok(g.value));
}

/** The --baseline checkout's figures beside this tree's. */
export function printBaseline(checkout: string, theirs: readonly RoundResult[], baseRateRatios: readonly number[]): void {
  console.log(`\nbaseline ${path.resolve(checkout)}, same rounds: event rate / ceiling ${median(baseRateRatios).toFixed(2)} (rounds ${baseRateRatios.map((v) => v.toFixed(2)).join(' ')}), `
    + `rotate -> stream p99 ${median(theirs.map((r) => r.p99Ms)).toFixed(1)} ms, ${median(theirs.map((r) => r.perStreamKb)).toFixed(2)} KB/stream`);
}
