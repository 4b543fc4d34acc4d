// Invariant: `troupe session dispatch|show|stop|watch`, run as real CLI processes against a node that a real
// `troupe worker` process serves, dispatch a session and print its id; watch follows it live (status changes on
// stderr, the agent's output on stdout exactly once, the end with its cost) and exits 0 when it completed, 2 when it
// failed or was stopped; --json prints one object a line; show prints the detail (as the document types it); stop
// ends a running session and says when there was nothing to stop; another org's session is not found; a missing
// credential, project or prompt and an unreachable node each fail with one line and exit 1.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { ajv } from '../../../schemas/ajv.js';
import { startTestNode, type TestNode } from '../../support/node.js';
import { provision, repoRoot, startWorker, stopWorkers, type ProvisionedOrg, api } from '../worker/support.js';

interface CliRun {
  readonly child: ChildProcess;
  /** Resolves when the process has exited. */
  readonly done: Promise<{ code: number | null; out: string; err: string }>;
  /** Resolves once stderr contains `text`. */
  stderrHas(text: string, timeoutMs?: number): Promise<void>;
}

const started = new Set<ChildProcess>();

/** `node ops/cli/bin.js …` as its own process, with a clean credential environment. */
function troupe(args: string[], env: Record<string, string> = {}): CliRun {
  const child = spawn(process.execPath, [path.join(repoRoot, 'ops/cli/bin.js'), ...args], {
    cwd: repoRoot, env: { ...process.env, TROUPE_TOKEN: '', TROUPE_PROJECT: '', TROUPE_URL: '', ...env }, stdio: ['pipe', 'pipe', 'pipe'],
  });
  started.add(child);
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout!.on('data', (chunk: Buffer) => { out += chunk.toString('utf8'); });
  child.stderr!.on('data', (chunk: Buffer) => { err += chunk.toString('utf8'); for (const w of [...waiters]) w(); });
  const done = new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    child.once('close', (code) => { started.delete(child); resolve({ code, out, err }); });
  });
  return {
    child, done,
    stderrHas(text, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => { if (err.includes(text)) { waiters.delete(check); clearTimeout(timer); resolve(); } };
        const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`stderr never showed ${JSON.stringify(text)}; it has:\n${err}`)); }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

const run = async (args: string[], env?: Record<string, string>) => troupe(args, env).done;

describe('troupe session dispatch|show|stop|watch, as real processes against a node and a worker', function () {
  this.timeout(120_000);
  let t: TestNode;
  let acme: ProvisionedOrg;
  let globex: ProvisionedOrg;
  /** `troupe --url <node> session …`; the org is chosen by the credential in the environment. */
  const session = () => ['--url', t.url, 'session'];
  const withKey = (org: ProvisionedOrg) => ({ TROUPE_TOKEN: org.apiKey });

  before(async () => {
    t = await startTestNode();
    acme = await provision(api(t.url), t.adminToken, 'Acme');
    globex = await provision(api(t.url), t.adminToken, 'Globex');
  });
  afterEach(async () => {
    for (const child of started) child.kill('SIGKILL');
    await stopWorkers();
  });
  after(async () => { await t?.close(); });

  const dispatch = async (prompt: string): Promise<string> => {
    const r = await run([...session(), 'dispatch', '--project', acme.projectId, '--prompt', prompt], withKey(acme));
    expect(r.code, r.err).to.equal(0);
    expect(r.err).to.contain('troupe session watch');
    const id = r.out.trim();
    expect(id).to.match(/^[0-9a-f]{16}$/);
    return id;
  };

  it('dispatches, then watches the session live from pending to completed: output once, status lines, cost, exit 0', async () => {
    const id = await dispatch('Fix ENG-1');
    const watch = troupe([...session(), 'watch', id], withKey(acme));
    await watch.stderrHas(`session ${id} is pending`);
    // The worker starts only now: everything after pending is seen live.
    startWorker({ url: t.url, registrationToken: acme.registrationToken, env: { ECHO_AGENT_TICK_MS: '150' } });
    const { code, out, err } = await watch.done;
    expect(code, err).to.equal(0);
    for (const change of ['pending → claimed', 'claimed → running', 'running → finalizing', 'finalizing → completed']) expect(err).to.contain(change);
    expect(err).to.match(/completed · cost \$0\.0100 · \d+\.\d s/);
    expect(out).to.contain(`session ${id} of project ${acme.projectId}`);
    expect(out.split('\n').filter((l) => l === 'prompt: Fix ENG-1'), out).to.have.length(1);
    expect(out.split('\n').filter((l) => l === 'done'), out).to.have.length(1);
    expect(out).to.contain('working… step 3 of 3\n');
    expect(out).not.to.contain('costUsd');

    // Watching a session that already ended prints what was kept and its end at once.
    const again = await run([...session(), 'watch', id], withKey(acme));
    expect(again.code).to.equal(0);
    expect(again.out).to.contain('working… step 3 of 3\n');
    expect(again.err).to.contain('completed · cost $0.0100');
  });

  it('joined mid-run, each of six watches prints every output line once: the kept tail, then the live stream, no seam', async () => {
    // A line every 15 ms, relayed in frames up to 100 ms late: a watch that joins mid-run reads the kept tail while
    // lines stored before that read are still on their way to the stream.
    const lines = 1200;
    startWorker({ url: t.url, registrationToken: acme.registrationToken, env: { ECHO_AGENT_LINES: String(lines), ECHO_AGENT_TICK_MS: '15' } });
    const id = await dispatch('Count');
    const watches: CliRun[] = [];
    for (let i = 0; i < 6; i++) {
      const watch = troupe([...session(), 'watch', id], withKey(acme));
      watches.push(watch);
      await watch.stderrHas(`session ${id} is `, 30_000);
    }
    let joinedLive = 0;
    for (const [i, watch] of watches.entries()) {
      const { code, out, err } = await watch.done;
      expect(code, err).to.equal(0);
      if (/ is (claimed|running) /.test(err)) joinedLive++;
      const pattern = new RegExp(`^working… step (\\d+) of ${lines}$`);
      const steps = out.split('\n').flatMap((l) => pattern.exec(l)?.[1] ?? []).map(Number);
      const first = steps[0] ?? 1;
      expect(steps, `watch ${i}: every step from ${first} to ${lines} once, in order`).to.deep.equal(Array.from({ length: lines + 1 - first }, (_, k) => first + k));
      expect(out.split('\n').filter((l) => l === 'done'), `watch ${i}`).to.have.length(1);
    }
    expect(joinedLive, 'watches that joined while the agent ran').to.be.at.least(3);
  });

  it('dispatch --watch --json prints one JSON object a line; a failing agent exits 2', async () => {
    startWorker({ url: t.url, registrationToken: acme.registrationToken, env: { ECHO_AGENT_TICK_MS: '50' } });
    const ok = await run([...session(), 'dispatch', '--project', acme.projectId, '--prompt', 'Ship it', '--watch', '--json'], withKey(acme));
    expect(ok.code, ok.err).to.equal(0);
    const lines = ok.out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
    expect(lines[0]).to.include({ type: 'dispatched', status: 'pending' });
    expect(lines[1]).to.include({ type: 'session', id: lines[0]!.sessionId, projectId: acme.projectId });
    expect(lines.at(-1)).to.include({ type: 'end', status: 'completed', costUsd: 0.01, error: null });
    expect(lines.filter((l) => l.type === 'output').map((l) => l.text).join('')).to.contain('prompt: Ship it\n');
    // The agent's last line was kept before it finished: it prints before the session says so. (A watch whose
    // detail was read after the end prints no change lines at all; the ones it prints come after the output.)
    const lastOutput = lines.findLastIndex((l) => l.type === 'output');
    expect(lines[lastOutput]!.text).to.contain('done\n');
    const ending = lines.flatMap((l, i) => (l.type === 'status' && ['finalizing', 'completed'].includes(l.status) ? [i] : []));
    for (const i of ending) expect(i, JSON.stringify(lines)).to.be.greaterThan(lastOutput);

    const failing = await run([...session(), 'dispatch', '--project', acme.projectId, '--prompt', 'please fail', '--watch'], withKey(acme));
    expect(failing.code, failing.err).to.equal(2);
    expect(failing.err).to.contain('failed: the agent ended with exit code 1');
    expect(failing.out).to.contain('prompt: please fail');
  });

  it('shows a session as text and as the JSON the document describes', async () => {
    startWorker({ url: t.url, registrationToken: acme.registrationToken, env: { ECHO_AGENT_TICK_MS: '20' } });
    const id = await dispatch('Describe me');
    expect((await run([...session(), 'watch', id], withKey(acme))).code).to.equal(0);

    const text = await run([...session(), 'show', id], withKey(acme));
    expect(text.code, text.err).to.equal(0);
    expect(text.out).to.match(new RegExp(`^session +${id}$`, 'm'));
    expect(text.out).to.match(/^status +completed · run 1$/m);
    expect(text.out).to.match(/^cost +\$0\.0100$/m);
    expect(text.out).to.contain('pending → claimed');
    expect(text.out).to.contain('  prompt: Describe me');

    const json = await run([...session(), 'show', id, '--json'], withKey(acme));
    const detail = JSON.parse(json.out);
    expect(detail).to.include({ id, status: 'completed', costUsd: 0.01 });
    const doc = (await t.call('GET', '/api/openapi.json')).json;
    const schema = doc.paths['/api/public/sessions/{id}'].get.responses['200'].content['application/json'].schema;
    const validate = ajv.compile(schema);
    expect(validate(detail), JSON.stringify(validate.errors)).to.equal(true);
  });

  it('stops a running session (the watcher sees it and exits 2); a second stop has nothing to stop', async () => {
    startWorker({ url: t.url, registrationToken: acme.registrationToken, env: { ECHO_AGENT_LINES: '1000', ECHO_AGENT_TICK_MS: '100' } });
    const id = await dispatch('Run for a long time');
    const watch = troupe([...session(), 'watch', id], withKey(acme));
    await watch.stderrHas('running');

    // Another org's credential neither sees nor stops it.
    const foreign = await run([...session(), 'stop', id], withKey(globex));
    expect(foreign.code).to.equal(1);
    expect(foreign.err.trim().split('\n')).to.have.length(1);
    expect(foreign.err).to.contain('404 NOT_FOUND');
    const foreignShow = await run([...session(), 'show', id], withKey(globex));
    expect(foreignShow.code).to.equal(1);
    expect(foreignShow.err).to.contain('404 NOT_FOUND');

    const stop = await run([...session(), 'stop', id], withKey(acme));
    expect(stop.code, stop.err).to.equal(0);
    expect(stop.out).to.equal(`stopped session ${id} (was running)\n`);
    const watched = await watch.done;
    expect(watched.code, watched.err).to.equal(2);
    expect(watched.err).to.contain('running → stopped');
    expect(watched.out).to.contain('working… step 1 of 1000');

    const twice = await run([...session(), 'stop', id, '--json'], withKey(acme));
    expect(twice.code).to.equal(0);
    expect(JSON.parse(twice.out)).to.include({ stopped: false, sessionId: id });
  });

  it('dispatches on a project repository at a ref with --repository, --ref and --agent, and show names them', async () => {
    const repo = await t.call('POST', `/api/projects/${acme.projectId}/repositories`, { token: acme.ownerToken, body: { url: 'git@github.com:acme/cli-app.git' } });
    expect(repo.status, repo.text).to.equal(201);
    const r = await run([...session(), 'dispatch', '--project', acme.projectId, '--prompt', 'On a branch', '--repository', 'cli-app', '--ref', 'feature/cli', '--agent', 'codex'], withKey(acme));
    expect(r.code, r.err).to.equal(0);
    const id = r.out.trim();
    const detail = (await t.call('GET', `/api/public/sessions/${id}`, { token: acme.apiKey })).json;
    expect(detail).to.deep.include({ ref: 'feature/cli', repository: { id: repo.json.id, url: 'git@github.com:acme/cli-app.git', name: 'cli-app', defaultBranch: 'main' } });
    const shown = await run([...session(), 'show', id], withKey(acme));
    expect(shown.out).to.match(/^repository +cli-app \(git@github\.com:acme\/cli-app\.git\) at feature\/cli$/m);
  });

  it('fails with one line and exit 1 without a credential, a project or a prompt, on a bad session id and when the node is down', async () => {
    const cases: [string[], Record<string, string>, string][] = [
      [[...session(), 'show', 'abcdef0123456789'], {}, 'no credential: pass --token or set TROUPE_TOKEN'],
      [[...session(), 'dispatch', '--prompt', 'x'], withKey(acme), 'no project: pass --project'],
      [[...session(), 'dispatch', '--project', acme.projectId], withKey(acme), 'no prompt'],
      [[...session(), 'dispatch', '--project', 'not-a-uuid', '--prompt', 'x'], withKey(acme), '400 VALIDATION_FAILED'],
      [[...session(), 'dispatch', '--project', acme.projectId, '--prompt', 'x', '--repository', 'no-such-repo'], withKey(acme), '400 VALIDATION_FAILED'],
      [[...session(), 'dispatch', '--project', acme.projectId, '--prompt', 'x', '--agent', 'bash'], withKey(acme), '--agent must be one of command, claude-code, codex, gemini'],
      [[...session(), 'watch', 'not-a-session'], withKey(acme), '404 NOT_FOUND'],
      [['--url', 'http://127.0.0.1:1', 'session', 'show', 'abcdef0123456789'], withKey(acme), 'cannot reach Troupe at http://127.0.0.1:1'],
    ];
    for (const [args, env, reason] of cases) {
      const r = await run(args, env);
      expect(r.code, `${args.join(' ')}: ${r.err}`).to.equal(1);
      expect(r.err.trim().split('\n'), r.err).to.have.length(1);
      expect(r.err).to.contain(reason);
    }
  });
});
