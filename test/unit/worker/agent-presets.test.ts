// Invariant: a prompt reaches an agent CLI as exactly one argument (or, where the CLI's own parser would read
// that argument as something else, on stdin), never through a shell, and never where the CLI could take it for a
// flag or a subcommand; a follow-up resumes only an id that cannot be a flag; `--agent-args` is split like a
// shell would split it without running one; and every agent flag that cannot work is refused at start, by name.
import { expect } from 'chai';
import { Command } from 'commander';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { splitArgs } from '../../../ops/cli/worker/agents/argv-split.js';
import { AgentOptionError, presetNamed, resolveAgent, type AgentInvocation, type AgentOptions } from '../../../ops/cli/worker/agents/index.js';
import { defaultPrices, parsePriceTable } from '../../../ops/cli/worker/agents/prices.js';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/agents');
const temp = () => mkdtempSync(path.join(os.tmpdir(), 'troupe-agent-presets-'));
const plain: AgentOptions = { extraArgs: [], prices: defaultPrices };
const THREAD = '0199a213-81c0-7800-8aa1-bbab2a035a53';

const HOSTILE = [
  '$(touch pwned)',
  '`touch pwned` and $HOME',
  'first line\nsecond line; rm -rf ~ && echo done',
  '--help me with this',
  '-p print this instead',
  '--resume=other-session continue',
  `it's a "quote" \\ and a 'single' one`,
  ' leading space, trailing one ',
  'update the README',
];
/** One-word prompts that commander would dispatch, or take as a flag, even after `--`. */
const ONE_WORD = ['update', 'help', 'mcp', '--help', '-', '--', ''];
const NOT_IDS = ['--help', '-r', '', '../x', 'a b', `${THREAD}\n`, 'x'.repeat(201), '$(id)'];

/** Claude Code's command line as far as it matters here: commander, print switch, variadic tool lists, subcommands. */
function claudeReads(args: readonly string[]): { prompt?: string; subcommand?: string; opts?: Record<string, unknown> } {
  let read: { prompt?: string; subcommand?: string; opts?: Record<string, unknown> } = {};
  const program = new Command('claude').exitOverride().configureOutput({ writeOut: () => {}, writeErr: () => {} })
    .option('-p, --print').option('--output-format <format>').option('--verbose').option('-r, --resume [id]')
    .option('--allowedTools <tools...>').option('--model <model>')
    .argument('[prompt]')
    .action((prompt: string | undefined, opts: Record<string, unknown>) => { read = { prompt, opts }; });
  for (const name of ['update', 'mcp']) program.command(name).action(() => { read = { subcommand: name }; });
  program.parse([...args], { from: 'user' });
  return read;
}

/** Gemini CLI's parser (yargs) with its prompt and resume options. */
const yargsParser = createRequire(import.meta.url)('yargs-parser') as (args: string[], opts: object) => Record<string, unknown>;
const geminiReads = (args: readonly string[]) => yargsParser([...args], {
  string: ['prompt', 'resume', 'output-format', 'model'], boolean: ['yolo'], alias: { prompt: ['p'], resume: ['r'], model: ['m'] },
});

describe('agent presets: command lines', () => {
  describe('claude-code', () => {
    const claude = presetNamed('claude-code');
    const extra: AgentOptions = { ...plain, extraArgs: ['--allowedTools', 'Bash', 'Read'] };

    it('puts a prompt after `--`, one argument, that the CLI reads back whole, on a first run and a follow-up', () => {
      for (const prompt of HOSTILE) {
        const first = claude.firstRun(prompt, extra);
        const follow = claude.followUp(prompt, THREAD, extra);
        expect(first).to.deep.equal({
          bin: 'claude', args: ['-p', '--output-format', 'stream-json', '--verbose', '--allowedTools', 'Bash', 'Read', '--', prompt], stdin: { kind: 'none' },
        });
        expect(follow.args).to.deep.equal(['-p', '--output-format', 'stream-json', '--verbose', '--resume', THREAD, '--allowedTools', 'Bash', 'Read', '--', prompt]);
        expect(claudeReads(first.args), prompt).to.deep.include({ prompt });
        expect(claudeReads(follow.args).opts, prompt).to.deep.include({ resume: THREAD, print: true, allowedTools: ['Bash', 'Read'] });
      }
    });

    it('sends a one-word prompt on stdin, since commander dispatches a subcommand even after `--`', () => {
      expect(claudeReads(['-p', '--', 'update'])).to.deep.equal({ subcommand: 'update' });
      for (const prompt of ONE_WORD) {
        const run = claude.firstRun(prompt, plain);
        expect(run.args, prompt).to.deep.equal(['-p', '--output-format', 'stream-json', '--verbose']);
        expect(run.stdin, prompt).to.deep.equal({ kind: 'text', text: prompt });
        expect(claudeReads(run.args)).to.deep.include({ prompt: undefined });
      }
    });

    it('runs the binary named by --agent-bin', () => {
      expect(claude.firstRun('fix it', { ...plain, bin: '/opt/claude/bin/claude' }).bin).to.equal('/opt/claude/bin/claude');
    });
  });

  describe('codex', () => {
    const codex = presetNamed('codex');
    const extra: AgentOptions = { ...plain, extraArgs: ['-m', 'gpt-5.4', '-s', 'workspace-write'] };

    it('puts a prompt after `--`, one argument, on a first run and on `exec resume THREAD_ID`', () => {
      for (const prompt of [...HOSTILE, 'resume', 'review', '--', '--help']) {
        expect(codex.firstRun(prompt, extra), prompt).to.deep.equal({
          bin: 'codex', args: ['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.4', '-s', 'workspace-write', '--', prompt], stdin: { kind: 'none' },
        });
        expect(codex.followUp(prompt, THREAD, extra).args, prompt).to.deep.equal(
          ['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.4', '-s', 'workspace-write', 'resume', THREAD, '--', prompt],
        );
      }
    });

    it('sends the prompt `-` on stdin, which is where codex reads it from', () => {
      expect(codex.firstRun('-', plain)).to.deep.equal({ bin: 'codex', args: ['exec', '--json', '--skip-git-repo-check', '--', '-'], stdin: { kind: 'text', text: '-' } });
    });
  });

  describe('gemini', () => {
    const gemini = presetNamed('gemini');
    const extra: AgentOptions = { ...plain, extraArgs: ['--model', 'gemini-2.5-pro', '--yolo'] };

    it('gives the prompt as the value of `--prompt=` in one argument, which yargs reads back whole', () => {
      // Why not `-p PROMPT`: yargs takes a separate value that starts with `-` for a flag.
      expect(geminiReads(['-p', '--help'])).to.deep.include({ prompt: '', help: true });
      for (const prompt of [...HOSTILE, ...ONE_WORD]) {
        const first = gemini.firstRun(prompt, extra);
        const follow = gemini.followUp(prompt, THREAD, extra);
        expect(first).to.deep.equal({
          bin: 'gemini', args: ['--output-format', 'stream-json', '--model', 'gemini-2.5-pro', '--yolo', `--prompt=${prompt}`], stdin: { kind: 'none' },
        });
        expect(follow.args).to.deep.equal(['--output-format', 'stream-json', '--resume', THREAD, '--model', 'gemini-2.5-pro', '--yolo', `--prompt=${prompt}`]);
        expect(geminiReads(first.args), JSON.stringify(prompt)).to.deep.include({ prompt, model: 'gemini-2.5-pro', yolo: true });
        expect(geminiReads(follow.args), JSON.stringify(prompt)).to.deep.include({ prompt, resume: THREAD });
      }
    });
  });

  describe('command', () => {
    it('runs --agent-command through /bin/sh as today, the prompt on stdin and never in the command line', () => {
      const options: AgentOptions = { ...plain, command: 'node agent.mjs --fast' };
      for (const prompt of HOSTILE) {
        const expected: AgentInvocation = { bin: '/bin/sh', args: ['-c', 'trap : HUP\nnode agent.mjs --fast'], stdin: { kind: 'prompt-lines' } };
        expect(presetNamed('command').firstRun(prompt, options)).to.deep.equal(expected);
        // A plain command has no conversation to resume: a follow-up runs it afresh.
        expect(presetNamed('command').followUp(prompt, THREAD, options)).to.deep.equal(expected);
      }
    });
  });

  it('resumes only an agent session id that cannot be read as a flag or a path', () => {
    for (const name of ['claude-code', 'codex', 'gemini'] as const) {
      for (const id of NOT_IDS) expect(() => presetNamed(name).followUp('go on', id, plain), `${name} ${JSON.stringify(id)}`).to.throw(/not an agent session id/);
    }
  });

  it('runs the fake CLI as the worker will: the hostile prompt arrives as one argument and runs nothing', () => {
    const dir = temp();
    const bin = path.join(dir, 'bin');
    const repo = path.join(dir, 'repo');
    mkdirSync(bin);
    mkdirSync(repo);
    for (const name of ['claude', 'codex', 'gemini']) symlinkSync(path.join(fixtures, 'fake-agent.mjs'), path.join(bin, name));
    const git = (...args: string[]) => spawnSync('git', args, { cwd: repo, encoding: 'utf8' });
    git('init', '--quiet');
    const argvLog = path.join(dir, 'argv.jsonl');
    const prompt = '$(touch pwned) `touch pwned` ; touch pwned\nsecond line';
    const fixture = path.join(fixtures, 'claude-code/success.jsonl');
    const run = (inv: AgentInvocation, env: Record<string, string>) => spawnSync(inv.bin, inv.args, {
      cwd: repo, encoding: 'utf8', input: inv.stdin.kind === 'text' ? inv.stdin.text : '',
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, FAKE_AGENT_ARGV_LOG: argvLog, ...env },
    });

    const first = presetNamed('claude-code').firstRun(prompt, plain);
    const result = run(first, { FAKE_AGENT_FIXTURE: fixture, FAKE_AGENT_COMMIT: 'notes.md', FAKE_AGENT_EXIT: '3' });
    expect(result.status, result.stderr).to.equal(3);
    expect(result.stdout).to.equal(readFileSync(fixture, 'utf8'));
    const resumed = presetNamed('codex').followUp('-', THREAD, plain);
    expect(run(resumed, { FAKE_AGENT_READ_STDIN: '1' }).status).to.equal(0);

    const logged = readFileSync(argvLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as unknown);
    expect(logged).to.deep.equal([
      { bin: 'claude', argv: first.args, cwd: repo },
      { bin: 'codex', argv: resumed.args, cwd: repo, stdin: '-' },
    ]);
    expect(readdirSync(repo).sort()).to.deep.equal(['.git', 'notes.md']);
    expect(existsSync(path.join(dir, 'pwned'))).to.equal(false);
    expect(git('log', '--format=%s').stdout).to.equal('fake agent: add notes.md\n');
    expect(git('status', '--porcelain').stdout).to.equal('');
  });
});

describe('agent presets: --agent-args', () => {
  it('splits like a shell: blanks, quotes, escapes, and nothing expanded', () => {
    const cases: [string, string[]][] = [
      ['', []],
      ['  --yolo   -m  gemini-2.5-pro ', ['--yolo', '-m', 'gemini-2.5-pro']],
      [`--allowedTools 'Bash(git:*)' "Read" Edit`, ['--allowedTools', 'Bash(git:*)', 'Read', 'Edit']],
      [`--append-system-prompt "Say \\"done\\" at the end; cost: \\$0"`, ['--append-system-prompt', 'Say "done" at the end; cost: $0']],
      [`-c 'model="gpt-5.4"' --a=b\\ c`, ['-c', 'model="gpt-5.4"', '--a=b c']],
      [`''  ""  x''y`, ['', '', 'xy']],
      ['a\\\nb\tc\nd', ['ab', 'c', 'd']],
      [`'$(touch pwned)' "*.ts" ~ ?`, ['$(touch pwned)', '*.ts', '~', '?']],
    ];
    for (const [text, argv] of cases) expect(splitArgs(text), text).to.deep.equal(argv);
  });

  it('refuses what a shell would run, expand or leave open, saying what to do', () => {
    const refused: [string, RegExp][] = [
      ['--model x | tee log', /unquoted \| \(character 11\).*quote it/],
      ['a; rm -rf ~', /unquoted ;/],
      ['a && b', /unquoted &/],
      ['$(touch pwned)', /unquoted \$/],
      ['`touch pwned`', /unquoted `/],
      ['> out', /unquoted >/],
      ['"$HOME"', /unescaped \$ inside/],
      ['"`id`"', /unescaped ` inside/],
      [`'open`, /unterminated '/],
      ['"open', /unterminated "/],
      ['trailing\\', /escapes nothing/],
      ['a\0b', /NUL/],
    ];
    for (const [text, message] of refused) expect(() => splitArgs(text), text).to.throw(message);
  });
});

describe('agent presets: worker flags', () => {
  const refused = (flags: Parameters<typeof resolveAgent>[0], message: RegExp) => {
    expect(() => resolveAgent(flags, {}), JSON.stringify(flags)).to.throw(AgentOptionError, message);
  };

  it('keeps the command contract the default', () => {
    const { preset, options } = resolveAgent({ agentCommand: 'node agent.mjs' }, {});
    expect(preset.name).to.equal('command');
    expect(preset.firstRun('x', options).args).to.deep.equal(['-c', 'trap : HUP\nnode agent.mjs']);
  });

  it('refuses an unknown preset and each flag where it means nothing', () => {
    refused({ agent: 'cursor' }, /--agent must be one of command, claude-code, codex, gemini, not "cursor"/);
    refused({}, /--agent command needs --agent-command/);
    refused({ agentCommand: 'x', agentBin: '/bin/true' }, /--agent-bin applies to --agent claude-code, codex or gemini/);
    refused({ agentCommand: 'x', agentArgs: '--yolo' }, /--agent-args applies to/);
    refused({ agent: 'claude-code', agentCommand: 'claude -p' }, /--agent-command applies to --agent command/);
    refused({ agent: 'gemini', priceTable: '/dev/null' }, /--price-table applies to --agent codex/);
    refused({ agent: 'gemini', agentArgs: '--yolo | tee' }, /--agent-args has an unquoted \|/);
    refused({ agent: 'codex', agentBin: ' ' }, /--agent-bin must name a program/);
  });

  it('finds a bare --agent-bin on PATH and makes a relative one absolute, since the agent starts elsewhere', () => {
    expect(resolveAgent({ agent: 'codex', agentBin: 'codex-nightly' }, {}).options.bin).to.equal('codex-nightly');
    expect(resolveAgent({ agent: 'codex', agentBin: './tools/codex' }, {}).options.bin).to.equal(path.resolve('tools/codex'));
  });

  it('prices codex at the model of --agent-args, else of its config, else the table default', () => {
    const codexHome = temp();
    writeFileSync(path.join(codexHome, 'config.toml'), '# mine\nmodel = "gpt-5.3-codex"  # fast\napproval_policy = "never"\n[profiles.deep]\nmodel = "gpt-5.5"\n');
    const model = (agentArgs: string | undefined, env: NodeJS.ProcessEnv) => resolveAgent({ agent: 'codex', agentArgs }, env).options.model;
    expect(model('-m gpt-5.4', { CODEX_HOME: codexHome })).to.equal('gpt-5.4');
    expect(model('--model=gpt-5.4-mini -c model=gpt-5.2', { CODEX_HOME: codexHome })).to.equal('gpt-5.4-mini');
    expect(model(`-c 'model="gpt-5.2"'`, { CODEX_HOME: codexHome })).to.equal('gpt-5.2');
    expect(model(undefined, { CODEX_HOME: codexHome })).to.equal('gpt-5.3-codex');
    expect(model(undefined, { CODEX_HOME: temp() })).to.equal(undefined);
    expect(defaultPrices.models.has(defaultPrices.defaultModel)).to.equal(true);
  });

  it('reads an operator price table over the defaults', () => {
    const file = path.join(temp(), 'prices.json');
    writeFileSync(file, JSON.stringify({ defaultModel: 'in-house', models: { 'in-house': { input: 0.5, output: 1 }, 'gpt-5.5': { input: 4, cachedInput: 0.4, output: 25 } } }));
    const { prices } = resolveAgent({ agent: 'codex', priceTable: file }, {}).options;
    expect(prices.defaultModel).to.equal('in-house');
    expect(prices.models.get('in-house')).to.deep.equal({ input: 0.5, cachedInput: 0.5, output: 1 });
    expect(prices.models.get('gpt-5.5')).to.deep.equal({ input: 4, cachedInput: 0.4, output: 25 });
    expect(prices.models.get('gpt-5.4')).to.deep.equal(defaultPrices.models.get('gpt-5.4'));
  });

  it('refuses a price table that is unreadable or wrong anywhere, naming the file and the place', () => {
    const dir = temp();
    const table = (doc: string) => { const f = path.join(dir, `t${Math.random()}.json`); writeFileSync(f, doc); return f; };
    refused({ agent: 'codex', priceTable: path.join(dir, 'missing.json') }, /--price-table .*missing\.json: cannot be read \(ENOENT\)/);
    refused({ agent: 'codex', priceTable: table('{"models": {') }, /is not JSON/);
    refused({ agent: 'codex', priceTable: table('[]') }, /the table must be a JSON object/);
    refused({ agent: 'codex', priceTable: table('{"modles": {}}') }, /unknown member "modles"/);
    refused({ agent: 'codex', priceTable: table('{"models": {"m": {"input": -1, "output": 1}}}') }, /models\["m"\]\.input must be USD per million tokens/);
    refused({ agent: 'codex', priceTable: table('{"models": {"m": {"input": 1}}}') }, /models\["m"\]\.output is missing/);
    refused({ agent: 'codex', priceTable: table('{"models": {"m": {"input": 1, "output": "2"}}}') }, /models\["m"\]\.output must be USD/);
    refused({ agent: 'codex', priceTable: table('{"models": {"m": {"input": 1, "output": 1e9}}}') }, /from 0 to 10000/);
    refused({ agent: 'codex', priceTable: table('{"models": {"m": {"input": 1, "output": 2, "currency": "EUR"}}}') }, /unknown member "currency"/);
    refused({ agent: 'codex', priceTable: table('{"models": {"../x y": {"input": 1, "output": 2}}}') }, /is not a model name/);
    refused({ agent: 'codex', priceTable: table('{"defaultModel": "nobody-prices-this"}') }, /"defaultModel" must name a model the table prices/);
    refused({ agent: 'codex', priceTable: table(`{"models": {${Array.from({ length: 501 }, (_, i) => `"m${i}": {"input": 1, "output": 1}`).join(',')}}}`) }, /at most 500/);
    // A refused table changes nothing: the defaults are as they were.
    expect(parsePriceTable('{}')).to.deep.equal(defaultPrices);
  });
});
