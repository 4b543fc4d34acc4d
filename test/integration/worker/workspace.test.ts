// Invariant (issue 34 §2–3): a session's agent works in its own git worktree on `troupe/<sessionId>`, made from a
// per-repository mirror at the ref's commit; what it committed comes back as the report's `workspace` (commits,
// diffstat, dirty) and as the branch on origin; a follow-up finds the same tree, or, on a worker that no longer has
// it, the tree rebuilt from the pushed branch; concurrent sessions of one repository share no tree and leave the
// mirror sound; a refused push is reported, not retried; hostile refs and URLs run nothing; old worktrees are swept.
// Real git throughout, on bare repositories under a temp dir reached by file:// URLs; no network.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import {
  finishWorkspace, prepareWorkspace, sweepWorkspaces, workspacesSettled, WorkspaceError,
  type PrepareWorkspaceOptions, type PreparedWorkspace, type WorkspaceRepository,
} from '../../../ops/cli/worker/workspace/index.js';
import { gitAuth } from '../../../ops/cli/worker/workspace/askpass.js';
import { git, redactCredentials } from '../../../ops/cli/worker/workspace/git.js';
import { tempDir } from './support.js';

const identity = {
  GIT_AUTHOR_NAME: 'Agent', GIT_AUTHOR_EMAIL: 'agent@example.com', GIT_COMMITTER_NAME: 'Agent', GIT_COMMITTER_EMAIL: 'agent@example.com',
};

/** git as a person at a terminal runs it, for the test's own setup and checks. */
function run(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: { ...process.env, ...identity }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** What an agent does: write files, then commit them all. */
function agentCommits(dir: string, files: Record<string, string>, message: string): string {
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  run(dir, 'add', '-A');
  run(dir, 'commit', '-q', '-m', message);
  return run(dir, 'rev-parse', 'HEAD');
}

const originBranch = (originDir: string, branch: string): string | undefined => {
  try {
    return run(originDir, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`);
  } catch {
    return undefined;
  }
};

const newSessionId = () => randomBytes(8).toString('hex');

async function refusal(promise: Promise<unknown>): Promise<WorkspaceError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(WorkspaceError);
    return err as WorkspaceError;
  }
  throw new Error('expected a refusal, got an answer');
}

/** A bare origin whose `main` has one commit (README.md), a seed clone to move it on, and one worker's dirs. */
function newWorld() {
  const root = tempDir('workspace');
  const originDir = path.join(root, 'origin.git');
  const seed = path.join(root, 'seed');
  run(root, 'init', '-q', '--bare', '-b', 'main', originDir);
  run(root, 'init', '-q', '-b', 'main', seed);
  const main = agentCommits(seed, { 'README.md': 'hello\nworld\n' }, 'Initial commit');
  run(seed, 'push', '-q', originDir, 'main');
  const repository: WorkspaceRepository = { id: `repo-${randomBytes(3).toString('hex')}`, url: pathToFileURL(originDir).href, defaultBranch: 'main' };
  const worker = (name: string) => ({ stateDir: path.join(root, name, 'state'), workDir: path.join(root, name, 'work') });
  const options = (sessionId: string, extra: Partial<PrepareWorkspaceOptions> = {}): PrepareWorkspaceOptions => ({
    ...worker('a'), sessionId, repository, followUp: false, allowFileRepositories: true, ...extra,
  });
  /** Moves origin's main on by one commit, as a teammate's push would. */
  const advanceMain = (file: string, text: string) => {
    const sha = agentCommits(seed, { [file]: text }, `Teammate adds ${file}`);
    run(seed, 'push', '-q', originDir, 'main');
    return sha;
  };
  return { root, originDir, main, repository, worker, options, advanceMain, mirrorDir: path.join(root, 'a', 'state', 'mirrors', `${repository.id}.git`) };
}

describe('worker git workspaces (real git, bare repositories on disk)', function () {
  this.timeout(60_000);
  const roots: string[] = [];
  const world = () => {
    const w = newWorld();
    roots.push(w.root);
    return w;
  };
  afterEach(async () => {
    await workspacesSettled();
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  it('puts a session on troupe/<id> at the ref\'s commit, reports its commit and diffstat, and pushes the branch', async () => {
    const w = world();
    const id = newSessionId();
    const prepared = await prepareWorkspace(w.options(id));
    expect(prepared).to.include({ dir: path.join(w.root, 'a', 'work', id), branch: `troupe/${id}`, baseCommit: w.main, start: 'created' });
    expect(run(prepared.dir, 'symbolic-ref', 'HEAD')).to.equal(`refs/heads/troupe/${id}`);
    expect(run(prepared.dir, 'rev-parse', 'HEAD')).to.equal(w.main);
    expect(readFileSync(path.join(prepared.dir, 'README.md'), 'utf8')).to.equal('hello\nworld\n');

    const head = agentCommits(prepared.dir, { 'README.md': 'hello\nthere\n', 'NOTES.md': 'one\ntwo\n' }, 'Add notes and greet');
    const report = await finishWorkspace(prepared, { stateDir: w.worker('a').stateDir });
    expect(report).to.deep.equal({
      repository: w.repository.id, branch: `troupe/${id}`, baseCommit: w.main, headCommit: head,
      commits: [{ sha: head, subject: 'Add notes and greet' }], filesChanged: 2, insertions: 3, deletions: 1, dirty: false, pushed: true,
    });
    expect(originBranch(w.originDir, `troupe/${id}`), 'origin has the branch at headCommit').to.equal(head);
  });

  it('starts from a tag or a commit as well as a branch, and from the default branch when no ref is given', async () => {
    const w = world();
    run(w.originDir, 'tag', 'v1', w.main);
    const later = w.advanceMain('CHANGELOG.md', 'v2\n');
    for (const [ref, expected] of [['v1', w.main], [w.main.slice(0, 10), w.main], [undefined, later], ['refs/heads/main', later]] as const) {
      const prepared = await prepareWorkspace(w.options(newSessionId(), { ref }));
      expect(run(prepared.dir, 'rev-parse', 'HEAD'), `ref ${ref}`).to.equal(expected);
      expect(prepared.baseCommit).to.equal(expected);
    }
    const missing = await refusal(prepareWorkspace(w.options(newSessionId(), { ref: 'no-such-branch' })));
    expect(missing.code).to.equal('ref-not-found');
  });

  it('reuses the worktree for a follow-up, and rebuilds it from the pushed branch where it is gone', async () => {
    const w = world();
    const id = newSessionId();
    const first = await prepareWorkspace(w.options(id));
    const c1 = agentCommits(first.dir, { 'plan.md': 'step 1\n' }, 'Plan');
    writeFileSync(path.join(first.dir, 'scratch.txt'), 'left uncommitted\n');
    expect((await finishWorkspace(first, { stateDir: w.worker('a').stateDir })).pushed).to.equal(true);
    w.advanceMain('OTHER.md', 'meanwhile on main\n');

    const second = await prepareWorkspace(w.options(id, { followUp: true }));
    expect(second).to.include({ dir: first.dir, start: 'reused', baseCommit: w.main });
    expect(readFileSync(path.join(second.dir, 'scratch.txt'), 'utf8'), 'the first run\'s files are there').to.equal('left uncommitted\n');
    rmSync(path.join(second.dir, 'scratch.txt'));
    const c2 = agentCommits(second.dir, { 'plan.md': 'step 1\nstep 2\n' }, 'Plan step 2');
    const report = await finishWorkspace(second, { stateDir: w.worker('a').stateDir });
    expect(report.commits.map((c) => c.sha), 'the whole branch, newest first').to.deep.equal([c2, c1]);
    expect(report).to.include({ headCommit: c2, pushed: true, dirty: false });
    expect(originBranch(w.originDir, `troupe/${id}`)).to.equal(c2);

    // Another worker (its own state and work dirs) takes the next follow-up: it has no tree, origin has the branch.
    const elsewhere = await prepareWorkspace({ ...w.options(id, { followUp: true }), ...w.worker('b') });
    expect(elsewhere).to.include({ start: 'rebuilt', baseCommit: w.main });
    expect(run(elsewhere.dir, 'rev-parse', 'HEAD')).to.equal(c2);
    expect(run(elsewhere.dir, 'symbolic-ref', 'HEAD')).to.equal(`refs/heads/troupe/${id}`);
    expect(readFileSync(path.join(elsewhere.dir, 'plan.md'), 'utf8')).to.equal('step 1\nstep 2\n');

    // The first worker's tree deleted by hand: rebuilt the same way, in the same place.
    rmSync(first.dir, { recursive: true, force: true });
    const rebuilt = await prepareWorkspace(w.options(id, { followUp: true }));
    expect(rebuilt).to.include({ dir: first.dir, start: 'rebuilt' });
    expect(run(rebuilt.dir, 'rev-parse', 'HEAD')).to.equal(c2);
  });

  it('keeps ten concurrent sessions of one repository apart: ten trees, ten branches pushed, a sound mirror', async () => {
    const w = world();
    const ids = Array.from({ length: 10 }, newSessionId);
    const reports = await Promise.all(ids.map(async (id, n) => {
      const prepared = await prepareWorkspace(w.options(id));
      const head = agentCommits(prepared.dir, { [`work-${n}.txt`]: `session ${n}\n` }, `Session ${n} work`);
      return { prepared, head, report: await finishWorkspace(prepared, { stateDir: w.worker('a').stateDir }) };
    }));
    expect(new Set(reports.map((r) => r.prepared.dir)).size).to.equal(10);
    reports.forEach(({ prepared, head, report }, n) => {
      expect(report).to.include({ headCommit: head, baseCommit: w.main, pushed: true, filesChanged: 1 });
      expect(report.commits).to.deep.equal([{ sha: head, subject: `Session ${n} work` }]);
      expect(originBranch(w.originDir, `troupe/${ids[n]}`)).to.equal(head);
      expect(readdirSync(prepared.dir).filter((f) => f.startsWith('work-')), 'only its own file').to.deep.equal([`work-${n}.txt`]);
    });
    run(w.mirrorDir, 'fsck', '--no-progress', '--strict');
    run(w.originDir, 'fsck', '--no-progress', '--strict');
  });

  it('starts every one of forty staggered sessions while others fetch, make trees and push (a half-made tree never fails a fetch)', async () => {
    const w = world();
    const outcomes = await Promise.all(Array.from({ length: 40 }, async (_, n) => {
      await sleep((n * 37) % 1200);
      const prepared = await prepareWorkspace(w.options(newSessionId()));
      agentCommits(prepared.dir, { [`work-${n}.txt`]: `session ${n}\n` }, `Session ${n} work`);
      return finishWorkspace(prepared, { stateDir: w.worker('a').stateDir }).then((r) => r.pushed, (err: Error) => err.message);
    }).map((p) => p.catch((err: Error) => err.message)));
    expect(outcomes.filter((o) => o !== true), 'sessions that failed to start or push').to.deep.equal([]);
    run(w.mirrorDir, 'fsck', '--no-progress', '--strict');
  });

  it('reports a push origin refuses as pushed: false with git\'s message, and keeps the commits', async () => {
    const w = world();
    const hook = path.join(w.originDir, 'hooks', 'pre-receive');
    writeFileSync(hook, '#!/bin/sh\necho "this mirror is read-only" >&2\nexit 1\n');
    chmodSync(hook, 0o755);
    const id = newSessionId();
    const prepared = await prepareWorkspace(w.options(id));
    const head = agentCommits(prepared.dir, { 'fix.txt': 'fixed\n' }, 'Fix it');
    const report = await finishWorkspace(prepared, { stateDir: w.worker('a').stateDir });
    expect(report).to.include({ pushed: false, headCommit: head });
    expect(report.commits).to.have.length(1);
    expect(report.pushError).to.include('this mirror is read-only').and.to.include('pre-receive hook declined');
    expect(report.pushError!.length).to.be.at.most(2000);
    expect(originBranch(w.originDir, `troupe/${id}`)).to.equal(undefined);

    // The commits that origin refused are only on this worker: a follow-up whose tree is gone continues from them.
    rmSync(prepared.dir, { recursive: true, force: true });
    const followUp = await prepareWorkspace(w.options(id, { followUp: true }));
    expect(followUp).to.include({ start: 'rebuilt', baseCommit: w.main });
    expect(run(followUp.dir, 'rev-parse', 'HEAD')).to.equal(head);
  });

  it('pushes nothing when the agent committed nothing, and reports uncommitted changes as dirty', async () => {
    const w = world();
    const id = newSessionId();
    const prepared = await prepareWorkspace(w.options(id));
    writeFileSync(path.join(prepared.dir, 'draft.txt'), 'not committed\n');
    const report = await finishWorkspace(prepared, { stateDir: w.worker('a').stateDir });
    expect(report).to.deep.equal({
      repository: w.repository.id, branch: `troupe/${id}`, baseCommit: w.main, headCommit: w.main,
      commits: [], filesChanged: 0, insertions: 0, deletions: 0, dirty: true, pushed: false,
    });
    expect(originBranch(w.originDir, `troupe/${id}`)).to.equal(undefined);
  });

  it('says so when the agent deleted its tree, and refuses a sweep whose cut-off is not a number of hours', async () => {
    const w = world();
    const prepared = await prepareWorkspace(w.options(newSessionId()));
    rmSync(prepared.dir, { recursive: true, force: true });
    expect((await refusal(finishWorkspace(prepared, { stateDir: w.worker('a').stateDir }))).code).to.equal('dir-gone');
    for (const keepHours of [Number.NaN, -1]) {
      expect((await refusal(sweepWorkspaces({ ...w.worker('a'), keepHours }))).code, String(keepHours)).to.equal('invalid-input');
    }
  });

  it('starts a session from the spare tree at the new tip of main, clean, once main has moved on', async () => {
    const w = world();
    await prepareWorkspace(w.options(newSessionId()));
    await workspacesSettled();
    const spares = () => readdirSync(w.worker('a').workDir).filter((f) => f.startsWith('.spare-'));
    const [spare] = spares();
    expect(spares(), 'a spare was made after the first start').to.have.length(1);
    const spareReadme = statSync(path.join(w.worker('a').workDir, spare!, 'README.md')).ino;
    const tip = w.advanceMain('NEW.md', 'new on main\n');
    const prepared = await prepareWorkspace(w.options(newSessionId()));
    expect(spares(), 'the spare was taken (another may be in the making)').not.to.include(spare);
    expect(statSync(path.join(prepared.dir, 'README.md')).ino, 'the session\'s tree is the spare, not a new checkout').to.equal(spareReadme);
    expect(run(prepared.dir, 'rev-parse', 'HEAD')).to.equal(tip);
    expect(run(prepared.dir, 'symbolic-ref', 'HEAD')).to.equal(`refs/heads/${prepared.branch}`);
    expect(run(prepared.dir, 'status', '--porcelain')).to.equal('');
    expect(readFileSync(path.join(prepared.dir, 'NEW.md'), 'utf8')).to.equal('new on main\n');
  });

  it('refuses hostile refs, URLs and session ids before git sees them; a ref like $(touch pwned) runs nothing', async () => {
    const w = world();
    const hostileRefs = ['--upload-pack=touch pwned', '-b', '$(touch pwned)', '`touch pwned`', 'main; touch pwned', 'a..b', 'main\ntouch pwned', 'x@{1}', ''];
    for (const ref of hostileRefs) {
      expect((await refusal(prepareWorkspace(w.options(newSessionId(), { ref })))).code, JSON.stringify(ref)).to.equal('invalid-input');
    }
    // A valid ref name that a shell would expand: git is never given a shell, so it is only a name that is not there.
    const shellLike = await refusal(prepareWorkspace(w.options(newSessionId(), { ref: '$(touch${IFS}pwned)' })));
    expect(shellLike.code).to.equal('ref-not-found');
    const hostileUrls = [
      '--upload-pack=touch pwned', 'ext::sh -c touch% pwned', 'ext::sh', 'fd::17', '-oProxyCommand=touch pwned', 'ssh://-oProxyCommand=touch/x',
      'git@-oProxyCommand=touch:x', `${w.repository.url} --upload-pack=touch`, `${w.repository.url}\n--upload-pack=touch`,
      'http://example.com/x.git', 'javascript:alert(1)', '',
    ];
    for (const url of hostileUrls) {
      const err = await refusal(prepareWorkspace(w.options(newSessionId(), { repository: { ...w.repository, url } })));
      expect(err.code, JSON.stringify(url)).to.equal('invalid-input');
    }
    for (const sessionId of ['../../etc', 'ABCDEF0123456789', '0123456789abcde', '-0123456789abcde']) {
      expect((await refusal(prepareWorkspace(w.options(sessionId)))).code, sessionId).to.equal('invalid-input');
    }
    const fileNotAllowed = await refusal(prepareWorkspace(w.options(newSessionId(), { allowFileRepositories: false })));
    expect(fileNotAllowed.message, 'file:// only where allowed, as on the node').to.include('TROUPE_ALLOW_FILE_REPOSITORIES');
    const badId = await refusal(prepareWorkspace(w.options(newSessionId(), { repository: { ...w.repository, id: '../other' } })));
    expect(badId.code).to.equal('invalid-input');
    for (const dir of [process.cwd(), w.root, w.worker('a').workDir, w.mirrorDir]) expect(existsSync(path.join(dir, 'pwned')), dir).to.equal(false);
    expect(existsSync(w.worker('a').workDir) ? readdirSync(w.worker('a').workDir) : [], 'no worktree was made').to.deep.equal([]);
  });

  it('keeps credentials out of its messages and hands a token to git through GIT_ASKPASS only', async () => {
    const w = world();
    const unreachable = { ...w.repository, url: 'https://robot:s3cret-token@127.0.0.1:1/team/app.git' };
    const err = await refusal(prepareWorkspace(w.options(newSessionId(), { repository: unreachable })));
    expect(err.code).to.equal('git-failed');
    expect(err.message).to.include('127.0.0.1').and.not.to.include('s3cret-token');
    expect(readdirSync(path.join(w.worker('a').stateDir, 'mirrors')), 'no half-made mirror is left').to.deep.equal([]);
    // git hides the password in that message itself; whatever git prints, a URL's user:password never gets through.
    expect(redactCredentials("fatal: could not read from 'https://robot:s3cret@host/x.git' nor ssh://git:tok@host:22/y"))
      .to.equal("fatal: could not read from 'https://host/x.git' nor ssh://host:22/y");

    const auth = gitAuth(w.worker('a').stateDir, 'ghs_tokenvalue');
    const answer = await git([...auth.config, 'credential', 'fill'], {
      cwd: w.root, timeoutMs: 10_000, env: auth.env, input: 'protocol=https\nhost=github.com\npath=team/app.git\n\n',
    });
    expect(answer).to.include('username=x-access-token').and.to.include('password=ghs_tokenvalue');
    expect(readFileSync(auth.env.GIT_ASKPASS!, 'utf8'), 'the script holds no token').not.to.include('ghs_tokenvalue');
  });

  it('sweeps a worktree unused for longer than it keeps them, with its local branch, and keeps recent and running ones', async () => {
    const w = world();
    const { stateDir, workDir } = w.worker('a');
    const [old, running, recent] = [newSessionId(), newSessionId(), newSessionId()];
    const oldOne = await prepareWorkspace(w.options(old));
    agentCommits(oldOne.dir, { 'old.txt': 'old\n' }, 'Old work');
    await finishWorkspace(oldOne, { stateDir });
    const stillRunning: PreparedWorkspace = await prepareWorkspace(w.options(running));
    await sleep(1500);
    await finishWorkspace(await prepareWorkspace(w.options(recent)), { stateDir });

    const { removed } = await sweepWorkspaces({ stateDir, workDir, keepHours: 1 / 3600 });
    expect(removed).to.deep.equal([old]);
    expect(existsSync(oldOne.dir)).to.equal(false);
    expect(existsSync(stillRunning.dir), 'a prepared, unfinished workspace stays').to.equal(true);
    expect(existsSync(path.join(workDir, recent))).to.equal(true);
    expect(run(w.mirrorDir, 'branch', '--list', `troupe/${old}`), 'its local branch went with it').to.equal('');
    expect(run(w.mirrorDir, 'worktree', 'list', '--porcelain')).not.to.include(old);

    const again = await prepareWorkspace(w.options(old, { followUp: true }));
    expect(again.start, 'a later follow-up rebuilds it from origin').to.equal('rebuilt');
    expect(readFileSync(path.join(again.dir, 'old.txt'), 'utf8')).to.equal('old\n');
  });
});
