// Invariant (issue 34, decision 0076): a session run that ends `completed` with a pushed workspace of new commits, on a
// GitHub repository of an org connected to GitHub, opens exactly one pull request (here on a fake GitHub on loopback):
// titled by the prompt's first line, from the run's branch into the session's ref, with the session's link, cost and
// commits; its number and URL are in the session detail and its tracker comment links it. No commits, no push, no
// GitHub connection, a repository elsewhere or a run that failed: no pull request. GitHub's 422 "already exists" is
// resolved by looking the pull request up; a 5xx is retried; a 404 is given up with the reason, and the tracker
// comment then goes without a link. Another org never sees any of it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from './support.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';
import { connectionSealContext } from '../../../actors/services/integrations/oauth/index.js';

interface PullRequest { readonly repository: string; readonly number: number; readonly title: string; readonly head: string; readonly base: string; readonly body: string; readonly token: string }

/** GitHub's pulls endpoints and its issue-comments endpoint, with scripted failures per repository. */
function fakeGithub() {
  const opened: PullRequest[] = [];
  const attempts: Array<{ repository: string; status: number }> = [];
  const lookups: string[] = [];
  const comments: Array<{ issue: string; body: string }> = [];
  /** Statuses to answer, in order, per repository before answering normally. */
  const script = new Map<string, number[]>();
  let next = 40;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const url = new URL(req.url ?? '/', 'http://github');
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      if (token !== 'github-token-1') return json(401, { message: 'Bad credentials' });
      const comment = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(url.pathname);
      if (comment && req.method === 'POST') {
        comments.push({ issue: `${comment[1]}#${comment[2]}`, body: JSON.parse(Buffer.concat(chunks).toString('utf8')).body });
        return json(201, { id: comments.length, html_url: `https://github.com/${comment[1]}/issues/${comment[2]}#issuecomment-${comments.length}` });
      }
      const pulls = /^\/repos\/([^/]+\/[^/]+)\/pulls$/.exec(url.pathname);
      if (!pulls) return json(404, { message: 'Not Found' });
      const repository = pulls[1]!;
      const owner = repository.split('/')[0]!;
      if (req.method === 'GET') {
        lookups.push(`${repository} ${url.searchParams.get('head')}`);
        const found = opened.filter((p) => p.repository === repository && `${owner}:${p.head}` === url.searchParams.get('head'));
        return json(200, found.map((p) => ({ number: p.number, html_url: `https://github.com/${repository}/pull/${p.number}` })));
      }
      const scripted = script.get(repository)?.shift();
      attempts.push({ repository, status: scripted ?? 201 });
      if (scripted !== undefined) return json(scripted, { message: `scripted ${scripted}` });
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { title: string; head: string; base: string; body: string };
      if (opened.some((p) => p.repository === repository && p.head === body.head)) {
        attempts[attempts.length - 1] = { repository, status: 422 };
        return json(422, { message: 'Validation Failed', errors: [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${owner}:${body.head}.` }] });
      }
      const pr = { repository, number: next++, ...body, token };
      opened.push(pr);
      return json(201, { number: pr.number, html_url: `https://github.com/${repository}/pull/${pr.number}` });
    });
  });
  return { server, opened, attempts, lookups, comments, script };
}

const sha = (c: string) => c.repeat(40);

for (const { set, skip } of engineSets) describe(`sessions: pull requests of completed runs (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  const github = fakeGithub();
  let t: TestNode;
  let org: Org;
  let bare: Org;
  let d: Daemon;
  let bareWorker: Daemon;

  before(async () => {
    await new Promise<void>((resolve) => github.server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(github.server.address() as AddressInfo).port}`;
    t = await startTestNode({
      engines: set,
      config: { outboundAllow: ['127.0.0.1'], githubApiUrl: url, trackerPollMs: 100, trackerRetryBaseMs: 50, publicUrl: 'https://troupe.example.test' },
    });
    org = await provisionOrg(t, 'Connected');
    bare = await provisionOrg(t, 'Unconnected');
    d = await registerDaemon(t, org);
    bareWorker = await registerDaemon(t, bare);
    const { db, secrets } = t.node.deps;
    const ownerId = (await t.inject('GET', '/api/cli/whoami', { token: org.ownerToken })).json.user.id as string;
    await upsertOAuthConnection(db, {
      orgId: org.orgId, provider: 'github', sealedTokens: secrets.seal(JSON.stringify({ access_token: 'github-token-1' }), connectionSealContext(org.orgId, 'github')),
      scope: null, expiresAt: null, connectedBy: ownerId, at: new Date(),
    });
  });
  after(async () => {
    await t?.close();
    await new Promise((resolve) => github.server.close(resolve));
  });

  const detail = async (id: string, o = org) => (await t.inject('GET', `/api/public/sessions/${id}`, { token: o.apiKey })).json;
  async function repository(o: Org, url: string, defaultBranch = 'main'): Promise<string> {
    const res = await t.inject('POST', `/api/projects/${o.projectId}/repositories`, { token: o.ownerToken, body: { url, defaultBranch } });
    expect(res.status, res.text).to.equal(201);
    return res.json.id;
  }
  const workspaceOf = (id: string, repositoryId: string, over: Record<string, unknown> = {}) => ({
    repository: repositoryId, branch: `troupe/${id}`, baseCommit: sha('a'), headCommit: sha('c'),
    commits: [{ sha: sha('c'), subject: 'Say goodbye too' }, { sha: sha('b'), subject: 'Add the greeting' }],
    filesChanged: 2, insertions: 14, deletions: 3, dirty: false, pushed: true, ...over,
  });
  /** Runs the session to its end as a worker does: the workspace comes with `finalizing`. */
  async function run(id: string, workspace: Record<string, unknown>, end = 'completed', worker = d) {
    for (const status of ['claimed', 'running']) expect((await report(t, worker, id, status)).status).to.equal(200);
    expect((await report(t, worker, id, 'finalizing', { workspace, usage: { inputTokens: 900, outputTokens: 120, costUsd: 0.37 } })).status).to.equal(200);
    const ended = await report(t, worker, id, end);
    expect(ended.status, ended.text).to.equal(200);
  }
  const settled = (id: string, o = org) => eventually(async () => {
    const delivery = (await detail(id, o)).pullRequestDelivery;
    return delivery !== null && delivery.status !== 'pending';
  }, `pull request of ${id} settled`, 20_000);
  const quiet = () => new Promise((resolve) => setTimeout(resolve, 600));

  it('opens one pull request per completed run with pushed commits, shows it, and the tracker comment links it', async () => {
    const repo = await repository(org, 'https://github.com/acme/api.git');
    const id = await dispatch(t, org, {
      prompt: 'Fix the greeting on the home page\n\nIt says "Helo".', repository: repo, ref: 'develop', trackerIssue: 'acme/api#12',
    });
    await run(id, workspaceOf(id, repo));
    await settled(id);
    const mine = github.opened.filter((p) => p.head === `troupe/${id}`);
    expect(mine).to.have.length(1);
    const [pr] = mine;
    expect(pr).to.include({ repository: 'acme/api', title: 'Fix the greeting on the home page', base: 'develop', token: 'github-token-1' });
    expect(pr!.body).to.contain(`(https://troupe.example.test/sessions/${id})`).and.contain('Cost: $0.37')
      .and.contain(`${sha('b').slice(0, 12)} Add the greeting\n${sha('c').slice(0, 12)} Say goodbye too`);
    const shown = await detail(id);
    expect(shown.pullRequest).to.deep.equal({ number: pr!.number, url: `https://github.com/acme/api/pull/${pr!.number}` });
    expect(shown.pullRequestDelivery).to.deep.include({ status: 'opened', repository: 'acme/api', head: `troupe/${id}`, base: 'develop', attempts: 1, lastError: null });

    await eventually(async () => github.comments.some((c) => c.issue === 'acme/api#12'), 'tracker comment posted', 20_000);
    const comments = github.comments.filter((c) => c.issue === 'acme/api#12');
    expect(comments).to.have.length(1);
    expect(comments[0]!.body).to.contain(`- Pull request: [#${pr!.number}](https://github.com/acme/api/pull/${pr!.number})`);

    // The worker retries its `completed` (a lost reply): still one pull request.
    expect((await report(t, d, id, 'completed')).status).to.equal(200);
    await quiet();
    expect(github.opened.filter((p) => p.head === `troupe/${id}`)).to.have.length(1);

    // Another org sees neither the session nor its pull request.
    const theirs = await t.inject('GET', `/api/public/sessions/${id}`, { token: bare.apiKey });
    expect(theirs.status).to.equal(404);
    expect(theirs.text).to.not.contain('/pull/');
  });

  it('titles by the first line, at most 120 characters, and merges into the default branch when the ref is a commit', async () => {
    const repo = await repository(org, 'git@github.com:acme/cli.git', 'trunk');
    const id = await dispatch(t, org, { prompt: `\n  ${'Refactor '.repeat(20)}\nrest`, repository: repo, ref: 'abcdef1' });
    await run(id, workspaceOf(id, repo));
    await settled(id);
    const [pr] = github.opened.filter((p) => p.head === `troupe/${id}`);
    expect(pr).to.include({ repository: 'acme/cli', base: 'trunk' });
    expect([...pr!.title]).to.have.length(120);
    expect(pr!.title.startsWith('Refactor Refactor')).to.equal(true);
    expect(pr!.title.endsWith('…')).to.equal(true);
  });

  it('opens none without commits, without a push, for a failed run, elsewhere than GitHub, or without a GitHub connection', async () => {
    const repo = await repository(org, 'https://github.com/acme/quiet.git');
    const noCommits = await dispatch(t, org, { repository: repo });
    await run(noCommits, workspaceOf(noCommits, repo, { commits: [], headCommit: sha('a'), filesChanged: 0, insertions: 0, deletions: 0 }));
    const notPushed = await dispatch(t, org, { repository: repo });
    await run(notPushed, workspaceOf(notPushed, repo, { pushed: false, pushError: 'remote: Permission to acme/quiet.git denied' }));
    const failed = await dispatch(t, org, { repository: repo });
    await run(failed, workspaceOf(failed, repo), 'failed');

    const elsewhere = await repository(org, 'https://gitlab.com/acme/elsewhere.git');
    const onGitlab = await dispatch(t, org, { repository: elsewhere });
    await run(onGitlab, workspaceOf(onGitlab, elsewhere));

    const theirRepo = await repository(bare, 'https://github.com/globex/quiet.git');
    const unconnected = await dispatch(t, bare, { repository: theirRepo });
    await run(unconnected, workspaceOf(unconnected, theirRepo), 'completed', bareWorker);

    await quiet();
    expect(github.attempts.filter((a) => a.repository.endsWith('/quiet')), 'nothing reached GitHub').to.deep.equal([]);
    for (const id of [noCommits, notPushed, failed]) expect(await detail(id)).to.deep.include({ pullRequest: null, pullRequestDelivery: null });
    expect((await detail(notPushed)).workspace).to.include({ pushed: false, pushError: 'remote: Permission to acme/quiet.git denied' });
    expect((await detail(onGitlab)).pullRequestDelivery).to.deep.include({ status: 'skipped', lastError: 'the repository is not on GitHub' });
    expect((await detail(unconnected, bare))).to.deep.include({ pullRequest: null });
    expect((await detail(unconnected, bare)).pullRequestDelivery).to.deep.include({ status: 'skipped', repository: 'globex/quiet', lastError: 'the org has no GitHub connection' });
  });

  it('resolves GitHub\'s 422 "already exists" by looking the pull request up, also for a follow-up run on the same branch', async () => {
    const repo = await repository(org, 'https://github.com/acme/web');
    const id = await dispatch(t, org, { prompt: 'Make the header sticky', repository: repo });
    await run(id, workspaceOf(id, repo));
    await settled(id);
    const first = (await detail(id)).pullRequest;
    expect(first).to.not.equal(null);

    // The session's second run pushes onto the same branch: GitHub answers 422, and the open one is recorded.
    expect((await t.inject('POST', `/api/public/sessions/${id}/prompt`, { token: org.apiKey, body: { prompt: 'and make it blue' } })).status).to.equal(200);
    await run(id, workspaceOf(id, repo, { commits: [{ sha: sha('d'), subject: 'Make it blue' }], headCommit: sha('d') }));
    await settled(id);
    const second = await detail(id);
    expect(second.run).to.equal(2);
    expect(second.pullRequest).to.deep.equal(first);
    expect(second.pullRequestDelivery).to.deep.include({ status: 'opened', lastError: null });
    expect(github.attempts.filter((a) => a.repository === 'acme/web').map((a) => a.status)).to.deep.equal([201, 422]);
    expect(github.lookups).to.include(`acme/web acme:troupe/${id}`);
    expect(github.opened.filter((p) => p.repository === 'acme/web')).to.have.length(1);
  });

  it('retries GitHub answering 500 and opens once; gives up on a 404 with the reason, and the comment goes without a link', async () => {
    github.script.set('acme/flaky', [500, 502]);
    const flakyRepo = await repository(org, 'https://github.com/acme/flaky.git');
    const flaky = await dispatch(t, org, { repository: flakyRepo });
    await run(flaky, workspaceOf(flaky, flakyRepo));
    await settled(flaky);
    expect(github.attempts.filter((a) => a.repository === 'acme/flaky').map((a) => a.status)).to.deep.equal([500, 502, 201]);
    expect((await detail(flaky)).pullRequestDelivery).to.deep.include({ status: 'opened', attempts: 3 });

    github.script.set('acme/gone', [404]);
    const goneRepo = await repository(org, 'https://github.com/acme/gone.git');
    const gone = await dispatch(t, org, { repository: goneRepo, trackerIssue: 'acme/gone#3' });
    await run(gone, workspaceOf(gone, goneRepo));
    await settled(gone);
    const shown = await detail(gone);
    expect(shown.pullRequest).to.equal(null);
    expect(shown.pullRequestDelivery).to.deep.include({ status: 'failed', attempts: 1 });
    expect(shown.pullRequestDelivery.lastError).to.contain('GitHub answered 404');
    await eventually(async () => github.comments.some((c) => c.issue === 'acme/gone#3'), 'tracker comment posted', 20_000);
    expect(github.comments.find((c) => c.issue === 'acme/gone#3')!.body).to.not.contain('Pull request');
  });
});
