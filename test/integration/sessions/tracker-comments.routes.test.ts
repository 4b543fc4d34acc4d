// Invariant: a session started from a Linear or GitHub issue posts exactly one comment on that issue for each terminal
// transition and one for a stop, through the org's OAuth connection, to the tracker's real API shape (here fake
// trackers on loopback): its status, duration, cost, the last lines of its output and a link. A tracker answering
// 500 three times then 200 gets the comment once; a 401 refreshes the token and the comment goes with the new one; a
// 404 is given up at once. Every outcome is in the session's detail and the metric; the transition never waits.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from './support.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';
import { connectionSealContext } from '../../../actors/services/integrations/oauth/index.js';

interface Received { readonly tracker: 'linear' | 'github'; readonly issue: string; readonly body: string; readonly token: string }

/** Linear's GraphQL endpoint, GitHub's issue-comments endpoint and Linear's token endpoint, with scripted failures. */
function fakeTrackers() {
  const comments: Received[] = [];
  const attempts: Array<{ tracker: string; issue: string; status: number }> = [];
  const refreshes: URLSearchParams[] = [];
  /** Statuses to answer, in order, per issue before answering normally. */
  const script = new Map<string, number[]>();
  const validTokens = new Set(['linear-token-1', 'github-token-1']);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const url = new URL(req.url ?? '/', 'http://tracker');
      if (url.pathname === '/oauth/token') {
        const form = new URLSearchParams(raw);
        refreshes.push(form);
        if (form.get('grant_type') !== 'refresh_token' || form.get('refresh_token') !== 'linear-refresh-1') return json(400, { error: 'invalid_grant' });
        validTokens.add('linear-token-2');
        return json(200, { access_token: 'linear-token-2', token_type: 'Bearer', expires_in: 3600, refresh_token: 'linear-refresh-2' });
      }
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      let tracker: 'linear' | 'github';
      let issue: string;
      let body: string;
      if (url.pathname === '/graphql') {
        const q = JSON.parse(raw) as { query: string; variables: { input: { issueId: string; body: string } } };
        if (!q.query.includes('commentCreate')) return json(400, { errors: [{ message: 'unknown operation' }] });
        tracker = 'linear'; issue = q.variables.input.issueId; body = q.variables.input.body;
      } else {
        const m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(url.pathname);
        if (!m || req.method !== 'POST') return json(404, { message: 'Not Found' });
        tracker = 'github'; issue = `${m[1]}#${m[2]}`; body = (JSON.parse(raw) as { body: string }).body;
      }
      const scripted = script.get(issue)?.shift();
      const status = scripted ?? (validTokens.has(token) ? 200 : 401);
      attempts.push({ tracker, issue, status });
      if (status !== 200) return json(status, { message: `scripted ${status}` });
      if (token === 'linear-token-1' && validTokens.has('linear-token-2')) return json(401, { message: 'revoked' });
      comments.push({ tracker, issue, body, token });
      return tracker === 'linear'
        ? json(200, { data: { commentCreate: { success: true, comment: { id: `c${comments.length}`, url: `https://linear.app/acme/issue/${issue}#c${comments.length}` } } } })
        : json(201, { id: comments.length, html_url: `https://github.com/${issue.replace('#', '/issues/')}#issuecomment-${comments.length}` });
    });
  });
  return { server, comments, attempts, refreshes, script, validTokens };
}

for (const { set, skip } of engineSets) describe(`sessions: tracker activity posted to Linear and GitHub (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  const fake = fakeTrackers();
  let t: TestNode;
  let org: Org;
  let bare: Org;
  let d: Daemon;

  before(async () => {
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    t = await startTestNode({
      engines: set,
      config: {
        outboundAllow: ['127.0.0.1'], linearApiUrl: url, githubApiUrl: url, linearOAuthBaseUrl: url,
        linearOAuthClientId: 'troupe-client', linearOAuthClientSecret: 'troupe-secret',
        trackerPollMs: 100, trackerRetryBaseMs: 50, publicUrl: 'https://troupe.example.test',
      },
    });
    org = await provisionOrg(t, 'Tracked');
    bare = await provisionOrg(t, 'Untracked');
    d = await registerDaemon(t, org);
    const { db, secrets } = t.node.deps;
    const ownerId = (await t.inject('GET', '/api/cli/whoami', { token: org.ownerToken })).json.user.id as string;
    for (const [provider, tokens] of [['linear', { access_token: 'linear-token-1', refresh_token: 'linear-refresh-1' }], ['github', { access_token: 'github-token-1' }]] as const) {
      await upsertOAuthConnection(db, {
        orgId: org.orgId, provider, sealedTokens: secrets.seal(JSON.stringify(tokens), connectionSealContext(org.orgId, provider)),
        scope: null, expiresAt: provider === 'linear' ? new Date(Date.now() + 3_600_000) : null, connectedBy: ownerId, at: new Date(),
      });
    }
  });
  after(async () => {
    await t?.close();
    await new Promise((resolve) => fake.server.close(resolve));
  });

  const detail = async (sessionId: string, o = org) => (await t.inject('GET', `/api/public/sessions/${sessionId}`, { token: o.apiKey })).json;
  const commentsOn = (issue: string) => fake.comments.filter((c) => c.issue === issue);
  const settled = (sessionId: string, count: number) => eventually(async () => {
    const comments = (await detail(sessionId)).trackerComments as Array<{ status: string }>;
    return comments.length === count && comments.every((c) => c.status !== 'pending');
  }, `tracker comments of ${sessionId} settled`, 20_000);
  async function complete(sessionId: string, output?: string[]) {
    for (const status of ['claimed', 'running']) expect((await report(t, d, sessionId, status)).status).to.equal(200);
    if (output) expect((await t.inject('POST', `/api/sessions/${sessionId}/output`, { token: d.runtimeJwt, body: { workerId: d.workerId, chunks: output } })).status).to.equal(202);
    expect((await report(t, d, sessionId, 'finalizing')).status).to.equal(200);
    expect((await report(t, d, sessionId, 'completed', { costUsd: 1.25 })).status).to.equal(200);
  }

  it('posts one comment per terminal transition and one per stop, with status, duration, cost, output and a link', async () => {
    const linearSession = await dispatch(t, org, { trackerIssue: 'ENG-42' });
    const output = Array.from({ length: 30 }, (_, i) => `step ${i + 1}\n`);
    await complete(linearSession, output);
    await settled(linearSession, 1);
    const [posted] = commentsOn('ENG-42');
    expect(commentsOn('ENG-42')).to.have.length(1);
    expect(posted!.body).to.contain(`Troupe session \`${linearSession}\` **completed**`);
    expect(posted!.body).to.contain('- Cost: $1.25');
    expect(posted!.body).to.match(/- Duration: \d+ s/);
    expect(posted!.body).to.contain('step 30').and.contain('step 16').and.not.contain('step 15\n');
    expect(posted!.body).to.contain(`(https://troupe.example.test/sessions/${linearSession})`);
    const [row] = (await detail(linearSession)).trackerComments;
    expect(row).to.include({ tracker: 'linear', issue: 'ENG-42', kind: 'terminal', run: 1, sessionStatus: 'completed', status: 'sent', attempts: 1, lastError: null });
    expect(row.url).to.match(/^https:\/\/linear\.app\//);

    const githubSession = await dispatch(t, org, { trackerIssue: 'acme/api#7' });
    const stopped = await t.inject('POST', `/api/public/sessions/${githubSession}/stop`, { token: org.apiKey });
    expect(stopped.json).to.include({ stopped: true, newStatus: 'stopped' });
    await settled(githubSession, 1);
    expect(commentsOn('acme/api#7').map((c) => c.body.split('\n')[0])).to.deep.equal([`**Stop signal received**: Troupe session \`${githubSession}\` was stopped.`]);
    // A second stop changes nothing, so it owes nothing.
    await t.inject('POST', `/api/public/sessions/${githubSession}/stop`, { token: org.apiKey });

    // A prompt re-dispatches the session; its second end owes a second comment, and only one.
    expect((await t.inject('POST', `/api/public/sessions/${linearSession}/prompt`, { token: org.apiKey, body: { prompt: 'once more' } })).status).to.equal(200);
    await complete(linearSession);
    await settled(linearSession, 2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(commentsOn('ENG-42')).to.have.length(2);
    expect(commentsOn('acme/api#7')).to.have.length(1);
  });

  it('retries a tracker answering 500 three times and posts once; refreshes the token on a 401; gives up on a 404', async () => {
    fake.script.set('acme/api#8', [500, 500, 500]);
    const flaky = await dispatch(t, org, { trackerIssue: 'acme/api#8' });
    await complete(flaky);
    await settled(flaky, 1);
    expect(fake.attempts.filter((a) => a.issue === 'acme/api#8').map((a) => a.status)).to.deep.equal([500, 500, 500, 200]);
    expect(commentsOn('acme/api#8')).to.have.length(1);
    expect((await detail(flaky)).trackerComments[0]).to.include({ status: 'sent', attempts: 4 });

    // The tracker stops taking the first Linear token: one refresh, and the comment goes with the new token.
    fake.validTokens.add('linear-token-2');
    const refreshed = await dispatch(t, org, { trackerIssue: 'ENG-43' });
    await complete(refreshed);
    await settled(refreshed, 1);
    expect(fake.refreshes.map((f) => f.get('refresh_token'))).to.deep.equal(['linear-refresh-1']);
    expect(commentsOn('ENG-43').map((c) => c.token)).to.deep.equal(['linear-token-2']);

    fake.script.set('acme/api#9', [404]);
    const missing = await dispatch(t, org, { trackerIssue: 'acme/api#9' });
    await complete(missing);
    await settled(missing, 1);
    const [failed] = (await detail(missing)).trackerComments;
    expect(failed).to.include({ status: 'failed', attempts: 1 });
    expect(failed.lastError).to.contain('github answered 404');
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).to.match(/troupe_tracker_comments_total\{[^}]*tracker="github"[^}]*outcome="failed"[^}]*\} [1-9]/);
    expect(metrics).to.match(/troupe_tracker_comments_total\{[^}]*tracker="github"[^}]*outcome="retry"[^}]*\} [3-9]/);
  });

  it('owes nothing for a session from no tracker issue, or an org without the tracker connection', async () => {
    const plain = await dispatch(t, org);
    await complete(plain);
    const theirs = await dispatch(t, bare, { trackerIssue: 'ENG-44' });
    await t.inject('POST', `/api/public/sessions/${theirs}/stop`, { token: bare.apiKey });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await detail(plain)).trackerComments).to.deep.equal([]);
    expect((await detail(theirs, bare)).trackerComments).to.deep.equal([]);
    expect(commentsOn('ENG-44')).to.deep.equal([]);
    expect((await t.inject('GET', `/api/public/sessions/${plain}`, { token: bare.apiKey })).status).to.equal(404);
  });
});
