// Benchmark (issue 34 §5): worker CPU to read a 50 MB agent transcript, per preset. A transcript in each CLI's
// format (ops/cli/worker/agents/, samples in test/fixtures/agents/) is generated in memory with the mix a coding run
// prints (text, tool calls whose results carry kilobytes of file and command output, streamed chunks), then read as
// the worker reads an agent's stdout: 64 KiB chunks through readline, each line through the preset's parser. CPU is
// process user + system time. Exits 1 when a preset costs more than 1 s for 50 MB.
//   npx tsx ops/bench/agent-parsers.ts [--mb 50]
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { presetNamed, type AgentOptions, type PresetName } from '../cli/worker/agents/index.js';
import { defaultPrices } from '../cli/worker/agents/prices.js';
import { printTable } from './harness.js';

const { values } = parseArgs({ options: { mb: { type: 'string', default: '50' } } });
const targetBytes = Number(values.mb) * 1024 * 1024;
const GOAL_MS_PER_50_MB = 1000;
const options: AgentOptions = { extraArgs: [], prices: defaultPrices, command: 'true' };

let seq = 0;
const words = 'the worker reads each line of the agent and keeps what the session shows to its user'.split(' ');
const prose = (chars: number) => {
  let s = '';
  while (s.length < chars) s += `${words[(seq++ * 7) % words.length]} `;
  return s.slice(0, chars);
};
const fileText = (lines: number) => Array.from({ length: lines }, (_, i) => `${String(i + 1).padStart(4)}  export const value${i} = compute(${i}, "${prose(40)}");`).join('\n');

/** One turn of each CLI's transcript: a few lines in the proportions a coding run has. */
const turns: Record<Exclude<PresetName, 'command'>, () => string[]> = {
  'claude-code': () => {
    const id = `toolu_${(seq++).toString(36).padStart(24, '0')}`;
    const msg = (content: unknown[]) => JSON.stringify({ type: 'assistant', message: { model: 'claude-sonnet-4-5-20250929', id: `msg_${seq}`, type: 'message', role: 'assistant', content, stop_reason: null, usage: { input_tokens: 7, cache_read_input_tokens: 18000, output_tokens: 120 } }, parent_tool_use_id: null, session_id: '6f0c6a3e-2b1d-4c55-9a3e-8f7d2c1b0a94', uuid: `u${seq}` });
    return [
      msg([{ type: 'text', text: prose(400) }]),
      msg([{ type: 'tool_use', id, name: 'Read', input: { file_path: `/work/repo/src/module${seq % 50}.ts` } }]),
      JSON.stringify({ type: 'user', message: { role: 'user', content: [{ tool_use_id: id, type: 'tool_result', content: fileText(80) }] }, parent_tool_use_id: null, session_id: '6f0c6a3e-2b1d-4c55-9a3e-8f7d2c1b0a94', uuid: `r${seq}` }),
      msg([{ type: 'tool_use', id: `${id}e`, name: 'Edit', input: { file_path: '/work/repo/src/a.ts', old_string: fileText(6), new_string: fileText(7) } }]),
      JSON.stringify({ type: 'user', message: { role: 'user', content: [{ tool_use_id: `${id}e`, type: 'tool_result', content: 'The file has been updated.' }] }, session_id: '6f0c6a3e-2b1d-4c55-9a3e-8f7d2c1b0a94' }),
    ];
  },
  codex: () => {
    const command = `/bin/bash -lc 'rg -n "value${seq % 90}" src'`;
    return [
      JSON.stringify({ type: 'item.completed', item: { id: `item_${seq++}`, type: 'reasoning', text: prose(200) } }),
      JSON.stringify({ type: 'item.started', item: { id: `item_${seq}`, type: 'command_execution', command, aggregated_output: '', exit_code: null, status: 'in_progress' } }),
      JSON.stringify({ type: 'item.completed', item: { id: `item_${seq}`, type: 'command_execution', command, aggregated_output: fileText(60), exit_code: seq % 5 === 0 ? 1 : 0, status: 'completed' } }),
      JSON.stringify({ type: 'item.completed', item: { id: `item_${++seq}`, type: 'file_change', changes: [{ path: `/work/repo/src/module${seq % 50}.ts`, kind: 'update' }], status: 'completed' } }),
      JSON.stringify({ type: 'item.completed', item: { id: `item_${++seq}`, type: 'agent_message', text: prose(300) } }),
    ];
  },
  gemini: () => {
    const id = `run_shell_command-${seq++}`;
    const ts = '2026-06-02T09:14:05.201Z';
    return [
      // Streamed text comes in small chunks: the most lines per megabyte of any format here.
      ...Array.from({ length: 12 }, (_, i) => JSON.stringify({ type: 'message', timestamp: ts, role: 'assistant', content: i === 11 ? `${prose(30)}\n` : prose(30), delta: true })),
      JSON.stringify({ type: 'tool_use', timestamp: ts, tool_name: 'run_shell_command', tool_id: id, parameters: { command: 'npm test', description: 'Run the tests.' } }),
      JSON.stringify({ type: 'tool_result', timestamp: ts, tool_id: id, status: 'success', output: fileText(50) }),
    ];
  },
};

function transcript(name: PresetName, bytes: number): Buffer {
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const turn = name === 'command' ? [prose(120), `{"troupe": {"costUsd": ${(seq++ / 1000).toFixed(3)}}}`] : turns[name]();
    for (const line of turn) { lines.push(line); size += Buffer.byteLength(line) + 1; }
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

/** Reads `data` as the worker reads stdout, returning CPU ms and how many events the parser gave. */
async function read(name: PresetName, data: Buffer): Promise<{ cpuMs: number; wallMs: number; events: number }> {
  const parser = presetNamed(name).createParser(options);
  const chunks = function* () { for (let i = 0; i < data.length; i += 65536) yield data.subarray(i, i + 65536); };
  let events = 0;
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const lines = createInterface({ input: Readable.from(chunks()), crlfDelay: Infinity });
  for await (const line of lines) events += parser.feed(line).length;
  events += parser.end().length;
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - wall, events };
}

const rows: Record<string, string | number>[] = [];
let over = false;
for (const name of ['claude-code', 'codex', 'gemini', 'command'] as const) {
  await read(name, transcript(name, 2 * 1024 * 1024)); // warm-up: the JIT, as in a worker that has run a while
  const data = transcript(name, targetBytes);
  const mb = data.length / (1024 * 1024);
  const lineCount = data.reduce((n, byte) => (byte === 0x0a ? n + 1 : n), 0);
  const { cpuMs, wallMs, events } = await read(name, data);
  const goalMs = (GOAL_MS_PER_50_MB * mb) / 50;
  over ||= cpuMs > goalMs;
  rows.push({ preset: name, MB: mb, lines: lineCount, events, 'CPU ms': Math.round(cpuMs), 'wall ms': Math.round(wallMs), 'MB/s (CPU)': mb / (cpuMs / 1000), 'goal ms': Math.round(goalMs) });
}
printTable(rows);
if (over) {
  console.error(`a preset took more than ${GOAL_MS_PER_50_MB} ms of CPU per 50 MB`);
  process.exit(1);
}
