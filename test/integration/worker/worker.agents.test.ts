// Invariant: `troupe worker --agent claude-code|codex|gemini`, run as a real process against a real node, starts the
// agent CLI found on PATH with the prompt as one argv element (shell text in it runs nothing), in a git worktree of
// the session's repository on the branch troupe/<id>; what the CLI prints becomes output, tool steps on the timeline,
// usage, cost and the agent's conversation id in the detail; its commits are pushed to origin and reported exactly;
// a follow-up prompt runs in the same worktree and resumes the same conversation; an error result fails the session;
// a refused push still completes the session with `pushed: false` and git's reason; ten sessions of one repository
// across two workers get ten branches and no shared tree. The CLIs are fake-agent.mjs replaying recorded samples.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { startNodeProcess, stopAll, type NodeProcess } from '../../cluster/processes.js';
import { engines, skipEngine } from '../../support/engines.js';
import {
  api, detail, dispatch, dropSchema, provision, repoRoot, startWorker, stopWorkers, tempDir, untilStatus, type Api, type ProvisionedOrg,
} from './support.js';

const fixtures = path.join(repoRoot, 'test/fixtures/agents');
const onPostgres = !skipEngine.postgres;
const schema = `t_agents_${randomBytes(4).toString('hex')}`;
const LIMITS = { TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '100000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000' };

const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

/** A bare origin with one commit on main, reached as file://. */
function bareOrigin(root: string, name: string): { dir: string; url: string } {
  const dir = path.join(root, `${name}.git`);
  const seed = path.join(root, `${name}-seed`);
  git(root, 'init', '--quiet', '--bare', '--initial-branch=main', dir);
  git(root, 'init', '--quiet', '--initial-branch=main', seed);
  writeFileSync(path.join(seed, 'README.md'), `# ${name}\n`);
  git(seed, 'add', 'README.md');
  git(seed, '-c', 'user.name=Seed', '-c', 'user.email=seed@example.invalid', 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', dir, 'main');
  return { dir, url: `file://${dir}` };
}

/** A directory holding `claude`, `codex` and `gemini`, each the fake CLI; it goes first on the worker's PATH. */
function fakeClis(root: string): string {
  const bin = path.join(root, 'bin');
  mkdirSync(bin);
  const fake = path.join(fixtures, 'fake-agent.mjs');
  chmodSync(fake, 0o755);
  for (const name of ['claude', 'codex', 'gemini']) symlinkSync(fake, path.join(bin, name));
  return bin;
}

const argvLog = (file: string): { bin: string; argv: string[]; cwd: string }[] =>
  existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { bin: string; argv: string[]; cwd: string }) : [];

describe(`troupe worker --agent: agent CLIs in repository worktrees, as real processes (node on ${onPostgres ? 'Postgres' : 'PGlite'})`, function () {
  this.timeout(120_000);
  const adminToken = generateAdminToken();
  let node: NodeProcess;
  let a: Api;
  let org: ProvisionedOrg;
  let root: string;
  let bin: string;

  before(async () => {
    root = tempDir('agents');
    bin = fakeClis(root);
    node = await startNodeProcess(`agents-test-${process.pid}`, {
      TROUPE_DATA_DIR: tempDir('node'), TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken,
      TROUPE_ALLOW_FILE_REPOSITORIES: '1', TROUPE_LOG_LEVEL: 'info', AMQP_URL: '', REDIS_URL: '', ...LIMITS,
      ...(onPostgres ? { DATABASE_URL: engines.postgres, TROUPE_DATABASE_SCHEMA: schema } : { DATABASE_URL: '' }),
    });
    a = api(node.url);
    org = await provision(a, adminToken);
  });
  afterEach(() => stopWorkers());
  after(async () => {
    await stopAll();
    if (onPostgres) await dropSchema(schema);
  });

  async function repository(name: string): Promise<{ id: string; dir: string }> {
    const origin = bareOrigin(root, name);
    const res = await a.call('POST', `/api/projects/${org.projectId}/repositories`, { token: org.apiKey, body: { url: origin.url, name } });
    expect(res.status, res.text).to.equal(201);
    return { id: res.json.id as string, dir: origin.dir };
  }

  function agentWorker(agent: string, env: Record<string, string>, name = `${agent}-worker`, capacity = 4) {
    return startWorker({
      url: node.url, registrationToken: org.registrationToken, name, capacity, agentCommand: null,
      args: ['--agent', agent, '--work-dir', path.join(root, `work-${name}`)],
      env: { PATH: `${bin}:${process.env.PATH ?? ''}`, TROUPE_ALLOW_FILE_REPOSITORIES: '1', ...env },
    });
  }

  it('claude-code: one argv element for the prompt, the worktree on troupe/<id>, output, steps, usage, push; a follow-up resumes in the same tree', async () => {
    const repo = await repository('greeter');
    const log = path.join(root, 'claude-argv.jsonl');
    const w = agentWorker('claude-code', {
      FAKE_AGENT_FIXTURE: path.join(fixtures, 'claude-code/success.jsonl'), FAKE_AGENT_ARGV_LOG: log, FAKE_AGENT_COMMIT: 'greeting.txt',
    });
    await w.waitFor((l) => l.event === 'worker.registered');
    const prompt = 'Make the greeting louder $(touch pwned) `touch pwned2`\nand keep the tests green';
    const id = await dispatch(a, org, prompt, { repository: 'greeter' });
    const done = await untilStatus(a, org, id, ['completed', 'failed'], 30_000);
    expect(done.status, done.error ?? '').to.equal('completed');

    const [first] = argvLog(log);
    expect(first!.bin).to.equal('claude');
    // The session's agent line (decision 0088) comes as `--mcp-config <a file outside the worktree>`.
    const line = (argv: string[]) => argv.slice(argv.indexOf('--mcp-config'), argv.indexOf('--mcp-config') + 2);
    expect(line(first!.argv)[0]).to.equal('--mcp-config');
    expect(line(first!.argv)[1]!.startsWith(root)).to.equal(false);
    expect(first!.argv).to.deep.equal(['-p', '--output-format', 'stream-json', '--verbose', ...line(first!.argv), '--', prompt]);
    const workDir = path.join(root, 'work-claude-code-worker', id);
    expect(first!.cwd).to.equal(workDir);
    for (const planted of ['pwned', 'pwned2']) {
      expect(existsSync(path.join(workDir, planted)), planted).to.equal(false);
      expect(existsSync(path.join(repoRoot, planted)), planted).to.equal(false);
    }

    expect(done.agent).to.deep.equal({ preset: 'claude-code', agentSessionId: '6f0c6a3e-2b1d-4c55-9a3e-8f7d2c1b0a94' });
    expect(done.usage).to.deep.equal({ inputTokens: 28 + 7066 + 66876, outputTokens: 463, costUsd: 0.0873415 });
    expect(done.costUsd).to.equal(0.0873415);
    expect(done.output.tail).to.include("I'll start by looking at how the greeting is built.");
    expect(done.output.tail, 'stream-json is parsed, not relayed').to.not.include('"type":"assistant"');
    const tools = done.activities.filter((x: { kind: string }) => x.kind === 'tool').map((x: { body: string }) => x.body);
    expect(tools[0]).to.match(/^Grep: /);
    expect(tools.length).to.be.greaterThan(1);

    const head = git(repo.dir, 'rev-parse', `refs/heads/troupe/${id}`);
    const ws = done.workspace;
    expect(ws).to.include({ repository: repo.id, branch: `troupe/${id}`, headCommit: head, filesChanged: 1, insertions: 1, deletions: 0, dirty: false, pushed: true });
    expect(ws.baseCommit).to.equal(git(repo.dir, 'rev-parse', 'main'));
    expect(ws.commits).to.deep.equal([{ sha: head, subject: 'fake agent: add greeting.txt' }]);

    const again = await a.call('POST', `/api/public/sessions/${id}/prompt`, { token: org.apiKey, body: { prompt: 'Now say it twice' } });
    expect(again.status, again.text).to.be.oneOf([200, 202]);
    await w.waitFor((l) => l.event === 'session.started' && l.sessionId === id && l.run === 2, 20_000, 'the follow-up started');
    const second = await untilStatus(a, org, id, ['completed', 'failed'], 30_000).then(async (d) => (d.workspace?.commits?.length === 2 ? d : untilStatus(a, org, id, ['completed'], 30_000)));
    expect(second.status).to.equal('completed');
    const [, resumed] = argvLog(log);
    expect(resumed!.argv).to.deep.equal(['-p', '--output-format', 'stream-json', '--verbose', '--resume', '6f0c6a3e-2b1d-4c55-9a3e-8f7d2c1b0a94', ...line(resumed!.argv), '--', 'Now say it twice']);
    expect(resumed!.cwd, 'the same worktree').to.equal(workDir);
    const greeting = git(repo.dir, 'show', `troupe/${id}:greeting.txt`);
    expect(greeting.split('\n'), "the follow-up saw the first run's file and added to it").to.have.length(2);
    expect(git(repo.dir, 'rev-list', '--count', `main..troupe/${id}`)).to.equal('2');
  });

  it('codex: tokens priced by the table, the thread id kept; an error result fails the session with its words', async () => {
    const w = agentWorker('codex', { FAKE_AGENT_FIXTURE: path.join(fixtures, 'codex/success.jsonl') });
    await w.waitFor((l) => l.event === 'worker.registered');
    const id = await dispatch(a, org, 'Explain the build');
    const done = await untilStatus(a, org, id, ['completed', 'failed'], 30_000);
    expect(done.status, done.error ?? '').to.equal('completed');
    expect(done.agent.preset).to.equal('codex');
    expect(done.agent.agentSessionId).to.be.a('string').and.not.equal('');
    expect(done.usage.inputTokens).to.be.greaterThan(0);
    expect(done.usage.costUsd).to.be.greaterThan(0);
    expect(done.costUsd).to.equal(done.usage.costUsd);
    expect(done.workspace, 'no repository, no workspace').to.equal(null);
    await stopWorkers();

    const failing = agentWorker('codex', { FAKE_AGENT_FIXTURE: path.join(fixtures, 'codex/error.jsonl') }, 'codex-failing');
    await failing.waitFor((l) => l.event === 'worker.registered');
    const bad = await dispatch(a, org, 'Explain the build again');
    const failed = await untilStatus(a, org, bad, ['completed', 'failed'], 30_000);
    expect(failed.status).to.equal('failed');
    expect(failed.error).to.be.a('string').and.not.match(/exit code/);
  });

  it('claude-code error result → failed; gemini runs its sample', async () => {
    const w = agentWorker('claude-code', { FAKE_AGENT_FIXTURE: path.join(fixtures, 'claude-code/error.jsonl') }, 'claude-failing');
    await w.waitFor((l) => l.event === 'worker.registered');
    const bad = await dispatch(a, org, 'Break it');
    const failed = await untilStatus(a, org, bad, ['completed', 'failed'], 30_000);
    expect(failed.status).to.equal('failed');
    await stopWorkers();

    const g = agentWorker('gemini', { FAKE_AGENT_FIXTURE: path.join(fixtures, 'gemini/success.jsonl') });
    await g.waitFor((l) => l.event === 'worker.registered');
    const id = await dispatch(a, org, 'Summarise the README');
    const done = await untilStatus(a, org, id, ['completed', 'failed'], 30_000);
    expect(done.status, done.error ?? '').to.equal('completed');
    expect(done.agent.preset).to.equal('gemini');
    expect(done.usage.outputTokens).to.be.greaterThan(0);
  });

  it('a refused push still completes the session, with pushed: false and git\'s reason', async () => {
    const repo = await repository('guarded');
    const hook = path.join(repo.dir, 'hooks/pre-receive');
    writeFileSync(hook, '#!/bin/sh\necho "pushes to this origin are closed for the freeze" >&2\nexit 1\n');
    chmodSync(hook, 0o755);
    const w = agentWorker('claude-code', { FAKE_AGENT_FIXTURE: path.join(fixtures, 'claude-code/success.jsonl'), FAKE_AGENT_COMMIT: 'frozen.txt' }, 'claude-frozen');
    await w.waitFor((l) => l.event === 'worker.registered');
    const id = await dispatch(a, org, 'Change something', { repository: repo.id });
    const done = await untilStatus(a, org, id, ['completed', 'failed'], 30_000);
    expect(done.status).to.equal('completed');
    expect(done.workspace.pushed).to.equal(false);
    expect(done.workspace.commits).to.have.length(1);
    expect(done.workspace.pushError).to.include('closed for the freeze');
    expect(() => git(repo.dir, 'rev-parse', '--verify', '--quiet', `refs/heads/troupe/${id}`)).to.throw();
  });

  it('ten sessions of one repository across two workers: ten branches at their reported heads, no tree shared', async () => {
    const repo = await repository('busy');
    const log = path.join(root, 'busy-argv.jsonl');
    const env = { FAKE_AGENT_FIXTURE: path.join(fixtures, 'claude-code/success.jsonl'), FAKE_AGENT_COMMIT: 'work.txt', FAKE_AGENT_ARGV_LOG: log };
    const workers = [agentWorker('claude-code', env, 'busy-1', 5), agentWorker('claude-code', env, 'busy-2', 5)];
    await Promise.all(workers.map((w) => w.waitFor((l) => l.event === 'worker.registered')));
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => dispatch(a, org, `Task ${i}`, { repository: 'busy' })));
    const done = await Promise.all(ids.map((id) => untilStatus(a, org, id, ['completed', 'failed'], 60_000)));
    expect(done.map((d) => d.status), done.map((d) => d.error ?? '').join(' | ')).to.deep.equal(Array(10).fill('completed'));
    const cwds = argvLog(log).map((r) => r.cwd);
    expect(new Set(cwds).size, 'one tree per session').to.equal(10);
    for (const d of done) {
      expect(d.workspace.pushed, d.workspace.pushError ?? '').to.equal(true);
      expect(git(repo.dir, 'rev-parse', `refs/heads/troupe/${d.id}`)).to.equal(d.workspace.headCommit);
    }
    git(repo.dir, 'fsck', '--strict', '--no-progress');
  });

  it('refuses to start with a flag its preset does not take, naming it', async () => {
    const w = startWorker({
      url: node.url, registrationToken: org.registrationToken, agentCommand: null, args: ['--agent', 'claude-code', '--price-table', '/dev/null'],
    });
    const exit = await w.exit;
    expect(exit.code).to.equal(1);
    expect(w.lines.map((l) => l.msg).join('\n')).to.include('--price-table applies to --agent codex');
  });

  it('a session whose repository cannot be fetched fails with git\'s reason, and the worker goes on', async () => {
    const res = await a.call('POST', `/api/projects/${org.projectId}/repositories`, { token: org.apiKey, body: { url: `file://${path.join(root, 'nowhere.git')}`, name: 'nowhere' } });
    expect(res.status, res.text).to.equal(201);
    const w = agentWorker('claude-code', { FAKE_AGENT_FIXTURE: path.join(fixtures, 'claude-code/success.jsonl') }, 'claude-nowhere');
    await w.waitFor((l) => l.event === 'worker.registered');
    const id = await dispatch(a, org, 'Try', { repository: 'nowhere' });
    const failed = await untilStatus(a, org, id, ['completed', 'failed'], 30_000);
    expect(failed.status).to.equal('failed');
    expect(failed.error).to.match(/workspace could not be prepared/);
    const next = await dispatch(a, org, 'Plain work');
    expect((await untilStatus(a, org, next, ['completed', 'failed'], 30_000)).status).to.equal('completed');
  });
});
