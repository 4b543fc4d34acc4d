// Invariant (issue 35 §3, decision 0088): the agent's `post_tracker_comment` goes through the tracker outbox: the text
// it wrote is posted as written on the issue its session came from (here a fake GitHub on loopback), once however often
// the call is retried with the same key, and listed in the session detail as a comment of kind `agent`. A session of
// an org without a connection to that tracker gets 409 and owes nothing.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';
import { connectionSealContext } from '../../../actors/services/integrations/oauth/index.js';

for (const { set, skip } of engineSets) describe(`troupe mcp: the agent's tracker comments (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  const posted: Array<{ issue: string; body: string }> = [];
  const github = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(req.url ?? '');
      if (!m || req.headers.authorization !== 'Bearer github-token-1') return res.writeHead(404).end('{}');
      posted.push({ issue: `${m[1]}#${m[2]}`, body: (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { body: string }).body });
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: posted.length, html_url: `https://github.com/c/${posted.length}` }));
    });
  });
  let t: TestNode;
  let org: Org;
  let bare: Org;
  let d: Daemon;
  let bareWorker: Daemon;

  before(async () => {
    await new Promise<void>((resolve) => github.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(github.address() as AddressInfo).port}`;
    t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1'], githubApiUrl: url, trackerPollMs: 100, trackerRetryBaseMs: 50 } });
    org = await provisionOrg(t, 'Tracked');
    bare = await provisionOrg(t, 'Untracked');
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
    await new Promise((resolve) => github.close(resolve));
  });

  const runningWithToken = async (o: Org, w: Daemon) => {
    const id = await dispatch(t, o, { trackerIssue: 'acme/api#12' });
    for (const status of ['claimed', 'running']) expect((await report(t, w, id, status)).status).to.equal(200);
    const minted = await t.inject('POST', `/api/sessions/${id}/agent-token`, { token: w.runtimeJwt, body: { workerId: w.workerId } });
    expect(minted.status, minted.text).to.equal(201);
    return { id, bearer: { authorization: `Bearer ${minted.json.token as string}` } };
  };

  it('posts the text as written, once per key, listed in the detail as kind agent', async () => {
    const { id, bearer } = await runningWithToken(org, d);
    const text = 'Found the cause: the cache key ignores the locale. Fix on `troupe/branch`.';
    for (let i = 0; i < 2; i++) {
      const res = await t.inject('POST', `/api/sessions/${id}/agent/tracker-comments`, { headers: bearer, body: { text, key: 'finding-1' } });
      expect(res.status, res.text).to.equal(202);
      expect(res.json).to.deep.equal({ tracker: 'github', issue: 'acme/api#12', status: 'pending' });
    }
    await eventually(async () => posted.length >= 1, 'the comment was posted', 15_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(posted).to.deep.equal([{ issue: 'acme/api#12', body: text }]);
    const comments = (await t.inject('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json.trackerComments as Array<Record<string, unknown>>;
    expect(comments).to.have.length(1);
    expect(comments[0]).to.include({ tracker: 'github', issue: 'acme/api#12', kind: 'agent', run: 1, status: 'sent' });
  });

  it('a run posts at most 20 comments; a retry of one it posted is still answered', async () => {
    const { id, bearer } = await runningWithToken(org, d);
    const post = (key: string) => t.inject('POST', `/api/sessions/${id}/agent/tracker-comments`, { headers: bearer, body: { text: `note ${key}`, key } });
    for (let i = 0; i < 20; i++) expect((await post(`n${i}`)).status).to.equal(202);
    const over = await post('n20');
    expect(over.status, over.text).to.equal(409);
    expect(over.json.details).to.deep.equal({ limit: 20 });
    expect((await post('n3')).status, 'a retried comment is not a new one').to.equal(202);
    const comments = (await t.inject('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json.trackerComments as unknown[];
    expect(comments).to.have.length(20);
  });

  it('an org without the connection: 409, nothing owed', async () => {
    const { id, bearer } = await runningWithToken(bare, bareWorker);
    const res = await t.inject('POST', `/api/sessions/${id}/agent/tracker-comments`, { headers: bearer, body: { text: 'hello' } });
    expect(res.status).to.equal(409);
    expect(res.json.error).to.match(/no github connection/);
    expect((await t.inject('GET', `/api/public/sessions/${id}`, { token: bare.apiKey })).json.trackerComments).to.deep.equal([]);
  });
});
