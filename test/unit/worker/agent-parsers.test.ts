// Invariant: each preset's parser turns its CLI's recorded transcript into exactly the events a user sees in the
// session (output text, tool steps with their summaries, token usage and cost, the agent's own session id, and a
// failed result for a reported failure), and turns any line it does not understand into plain output without
// ever throwing.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { presetNamed, type AgentEvent, type AgentOptions, type AgentPreset } from '../../../ops/cli/worker/agents/index.js';
import { defaultPrices, parsePriceTable } from '../../../ops/cli/worker/agents/prices.js';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/agents');
const options: AgentOptions = { extraArgs: [], prices: defaultPrices };
const WORK = '/var/lib/troupe/work';

function transcript(file: string): string[] {
  const lines = readFileSync(path.join(fixtures, file), 'utf8').split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

function parse(preset: AgentPreset, lines: string[], opts: AgentOptions = options): AgentEvent[] {
  const parser = preset.createParser(opts);
  return [...lines.flatMap((line) => parser.feed(line)), ...parser.end()];
}

const out = (text: string): AgentEvent => ({ kind: 'output', text });
const tool = (name: string, summary: string): AgentEvent => ({ kind: 'tool', name, summary });

describe('agent presets: parsers on recorded transcripts', () => {
  describe('claude-code (stream-json)', () => {
    const claude = presetNamed('claude-code');

    it('reads a successful run: text, tool steps, session id, usage with the reported cost', () => {
      expect(parse(claude, transcript('claude-code/success.jsonl'))).to.deep.equal([
        { kind: 'agentSession', id: '6f0c6a3e-2b1d-4c55-9a3e-8f7d2c1b0a94' },
        out("I'll start by looking at how the greeting is built."),
        tool('Grep', 'function greet'),
        tool('Edit', `${WORK}/a1b2c3d4e5f60718/src/greet.ts`),
        tool('Bash', 'npm test'),
        out('The greeting now ends with an exclamation mark.\nAll 3 tests pass.'),
        // input 28 + cache writes 7066 + cache reads 66876
        { kind: 'usage', inputTokens: 73970, outputTokens: 463, costUsd: 0.0873415 },
        { kind: 'result', failed: false },
      ]);
    });

    it('reads a failed run as failed, with the errors it lists', () => {
      expect(parse(claude, transcript('claude-code/error.jsonl'))).to.deep.equal([
        { kind: 'agentSession', id: '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a' },
        out('Let me run the migrations first.'),
        tool('Bash', 'npm run migrate -- --to latest'),
        { kind: 'usage', inputTokens: 29875, outputTokens: 140, costUsd: 0.0211234 },
        { kind: 'result', failed: true, error: 'Reached maximum number of turns (2)' },
      ]);
    });

    it('takes an error flag or any subtype but success as a failure, worded by the result itself', () => {
      const results = [
        '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 overloaded"}',
        '{"type":"result","subtype":"error_during_execution","is_error":true}',
      ].map((line) => parse(claude, [line]));
      expect(results).to.deep.equal([
        [{ kind: 'result', failed: true, error: 'API Error: 529 overloaded' }],
        [{ kind: 'result', failed: true, error: 'error_during_execution' }],
      ]);
    });
  });

  describe('codex (exec --json)', () => {
    const codex = presetNamed('codex');

    it('reads a successful run: messages, commands with failed exits, file changes, MCP calls, priced usage', () => {
      expect(parse(codex, transcript('codex/success.jsonl'))).to.deep.equal([
        { kind: 'agentSession', id: '0199a213-81c0-7800-8aa1-bbab2a035a53' },
        tool('command', `/bin/bash -lc 'rg -n "function greet" src'`),
        out("The greeting lives in src/greet.ts; I'll add the exclamation mark there."),
        tool('file_change', `update ${WORK}/c3d4e5f607182930/src/greet.ts`),
        tool('command', "exit 1: /bin/bash -lc 'npm test'"),
        tool('file_change', `update ${WORK}/c3d4e5f607182930/test/greet.test.ts, add ${WORK}/c3d4e5f607182930/CHANGELOG.md`),
        tool('troupe.report_progress', '{"step":"tests updated"}'),
        out('Done: greet() now ends with an exclamation mark, the test expects it, and the changelog says so.'),
        // gpt-5.5, the table's default: (315 × $5 + 24448 cached × $0.50 + 1122 × $30) per million
        { kind: 'usage', inputTokens: 24763, outputTokens: 1122, costUsd: 0.047459 },
        { kind: 'result', failed: false },
      ]);
    });

    it('prices the tokens at the model it runs, from an operator table', () => {
      const prices = parsePriceTable('{"models":{"gpt-5.4":{"input":2.5,"cachedInput":0.25,"output":15},"team-model":{"input":1,"output":2}}}');
      const usage = (model: string) => parse(codex, transcript('codex/success.jsonl'), { extraArgs: [], prices, model }).find((e) => e.kind === 'usage');
      expect(usage('gpt-5.4')).to.deep.equal({ kind: 'usage', inputTokens: 24763, outputTokens: 1122, costUsd: 0.0237295 });
      // No cached price given: cached input costs what input costs.
      expect(usage('team-model')).to.deep.equal({ kind: 'usage', inputTokens: 24763, outputTokens: 1122, costUsd: 0.027007 });
      // A model no table prices: the tokens, and no invented cost.
      expect(usage('unpriced-model')).to.deep.equal({ kind: 'usage', inputTokens: 24763, outputTokens: 1122 });
    });

    it('reads a failed run as failed, keeping its warnings and error as output', () => {
      const message = "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again later.";
      expect(parse(codex, transcript('codex/error.jsonl'))).to.deep.equal([
        { kind: 'agentSession', id: '0199a2f0-5c1d-7e42-9b3a-6d2e8f1a4c07' },
        out('Model metadata for `gpt-5.5` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.'),
        tool('command', "exit 1: /bin/bash -lc 'npm ci'"),
        out(message),
        { kind: 'result', failed: true, error: message },
      ]);
    });

    it('fails the run with the last error when codex stops before saying the turn failed', () => {
      expect(parse(codex, ['{"type":"error","message":"stream disconnected before completion"}'])).to.deep.equal([
        out('stream disconnected before completion'),
        { kind: 'result', failed: true, error: 'stream disconnected before completion' },
      ]);
    });
  });

  describe('gemini (stream-json)', () => {
    const gemini = presetNamed('gemini');

    it('reads a successful run: streamed text joined into lines, tool steps, session id, usage', () => {
      expect(parse(gemini, transcript('gemini/success.jsonl'))).to.deep.equal([
        { kind: 'agentSession', id: 'c2b2a1d6-3f4e-4a5b-9c6d-7e8f9a0b1c2d' },
        out("I'll read the greeting module first."),
        tool('read_file', `${WORK}/d4e5f60718293a4b/src/greet.ts`),
        tool('replace', `${WORK}/d4e5f60718293a4b/src/greet.ts`),
        tool('run_shell_command', 'npm test'),
        out('The greeting now ends with an exclamation mark and all 3 tests pass.'),
        { kind: 'usage', inputTokens: 19873, outputTokens: 412 },
        { kind: 'result', failed: false },
      ]);
    });

    it('reads a failed run as failed, with its warnings and errors as output', () => {
      const apiError = '[API Error: You have exhausted your capacity on this model. Your quota will reset after 2h13m.]';
      expect(parse(gemini, transcript('gemini/error.jsonl'))).to.deep.equal([
        { kind: 'agentSession', id: 'e4d3c2b1-a0f9-4e8d-8c7b-6a5f4e3d2c1b' },
        out('Checking which dependencies are outdated.'),
        tool('run_shell_command', 'npm outdated --json'),
        out('Loop detected, stopping execution'),
        out(apiError),
        { kind: 'usage', inputTokens: 8902, outputTokens: 97 },
        { kind: 'result', failed: true, error: apiError },
      ]);
    });

    it('gives out streamed text still held when the stream ends', () => {
      expect(parse(gemini, ['{"type":"message","role":"assistant","content":"half a ","delta":true}', '{"type":"message","role":"assistant","content":"sentence","delta":true}']))
        .to.deep.equal([out('half a sentence')]);
    });
  });

  describe('command (the agent contract)', () => {
    it('keeps every line as output except exactly the cost line', () => {
      expect(parse(presetNamed('command'), transcript('command/success.txt'), { ...options, command: 'true' })).to.deep.equal([
        out('starting on the greeting'),
        { kind: 'cost', costUsd: 0.01 },
        out('editing src/greet.ts'),
        out(''),
        { kind: 'cost', costUsd: 0.025 },
        out('{"troupe":{"costUsd":0.03},"extra":1}'),
        out('done'),
      ]);
    });

    it('refuses a cost that is not a finite number of dollars, keeping the line as output', () => {
      const parser = presetNamed('command').createParser(options);
      for (const line of ['{"troupe":{"costUsd":-1}}', '{"troupe":{"costUsd":"1"}}', '{"troupe":{"costUsd":1,"x":2}}', '{"troupe":{"costUsd":1e999}}', '[{"troupe":{"costUsd":1}}]']) {
        expect(parser.feed(line), line).to.deep.equal([out(line)]);
      }
      expect(parser.feed('  {"troupe": {"costUsd": 2.5}}  ')).to.deep.equal([{ kind: 'cost', costUsd: 2.5 }]);
    });
  });

  describe('what no parser understands', () => {
    const malformed = [
      'not json at all',
      'Warning: running in an unsupported terminal',
      '{"type":"assistant","message":{"content":[{"type":"text","text":"cut',
      '[1,2,3]',
      '"a string"',
      '{"type":"something_new","payload":{"a":1}}',
      '{"no_type":true}',
      '\u0000\u001b[31mcolour\u001b[0m',
    ];

    for (const name of ['claude-code', 'codex', 'gemini'] as const) {
      it(`${name}: keeps each malformed or unknown line as plain output, skips blank lines`, () => {
        const parser = presetNamed(name).createParser(options);
        for (const line of malformed) expect(parser.feed(line), line).to.deep.equal([out(line)]);
        expect(parser.feed('')).to.deep.equal([]);
        expect(parser.feed('   ')).to.deep.equal([]);
        expect(parser.end()).to.deep.equal([]);
      });

      it(`${name}: never throws on known types of the wrong shape, and never hands out a session id that could be a flag`, () => {
        const shapes = [
          '{"type":"system","subtype":"init","session_id":"--help"}',
          '{"type":"thread.started","thread_id":"-rf"}',
          '{"type":"init","session_id":"../../etc"}',
          '{"type":"assistant","message":null}',
          '{"type":"assistant","message":{"content":[null,1,{"type":"tool_use"},{"type":"text","text":5}]}}',
          '{"type":"result","usage":"many","total_cost_usd":-3,"errors":[null,{"message":7}]}',
          '{"type":"item.completed","item":{"type":"command_execution","command":{"x":1},"exit_code":"1"}}',
          '{"type":"item.completed","item":{"type":"file_change","changes":"all"}}',
          '{"type":"item.completed"}',
          '{"type":"turn.completed","usage":{"input_tokens":-5,"output_tokens":"9"}}',
          '{"type":"turn.failed","error":"x"}',
          '{"type":"message","role":"assistant","content":{"a":1},"delta":true}',
          '{"type":"tool_use","parameters":"\\u0000"}',
          '{"type":"result","status":"error","stats":[]}',
          '{"type":"__proto__","__proto__":{"polluted":true}}',
        ];
        const parser = presetNamed(name).createParser(options);
        const events = [...shapes.flatMap((line) => parser.feed(line)), ...parser.end()];
        expect(events.filter((e) => e.kind === 'agentSession')).to.deep.equal([]);
        for (const e of events) {
          if (e.kind === 'usage') {
            expect(e.inputTokens).to.be.at.least(0);
            expect(e.outputTokens).to.be.at.least(0);
            if (e.costUsd !== undefined) expect(e.costUsd).to.be.at.least(0);
          }
        }
        expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
      });
    }

    it('cuts a tool summary to 200 characters, whole characters only', () => {
      const parser = presetNamed('claude-code').createParser(options);
      const command = `echo ${'🦀'.repeat(150)}`;
      const [step] = parser.feed(JSON.stringify({ type: 'assistant', message: { content: [{ type: 'tool_use', name: 'Bash', input: { command } }] } }));
      expect(step).to.have.property('kind', 'tool');
      const summary = (step as { summary: string }).summary;
      expect(summary.length).to.be.at.most(200);
      expect(summary.endsWith('…')).to.equal(true);
      expect(summary.slice(0, -1)).to.equal(command.slice(0, summary.length - 1));
      expect(/[\ud800-\udbff]$/.test(summary.slice(0, -1))).to.equal(false);
    });
  });
});
