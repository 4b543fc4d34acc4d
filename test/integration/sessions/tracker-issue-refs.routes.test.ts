// Invariant: a GitHub issue reference can never take the tracker comment outside
// `/repos/{owner}/{repo}/issues/{n}/comments` (issue 30, finding 7). A dispatch whose trackerIssue has a `#` but is
// not a valid owner/repo#number (dot segments, encoded separators, characters GitHub does not allow) is 400
// VALIDATION_FAILED naming `trackerIssue` and creates nothing; a malformed reference already stored in the outbox is
// given up with the reason recorded, and the fake GitHub on loopback receives no request at all for it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { dispatch, provisionOrg, type Org } from './support.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';
import { connectionSealContext } from '../../../actors/services/integrations/oauth/index.js';
import { OutboundGuard } from '../../../actors/services/integrations/outbound/index.js';
import { postTrackerComment } from '../../../actors/services/integrations/trackers/post-comment.js';
import { sessionKeyOf } from '../../support/session-keys.js';

const BAD_REFS = ['../..#2', 'acme/..#2', './x#1', 'a%2F..#1', 'acme/%2e%2e#3', '..%2F..#2', 'acme/api/../..#4', 'ac me/api#1'];
const COMMENTS_PATH = /^\/repos\/[A-Za-z0-9-]+\/[A-Za-z0-9_.-]+\/issues\/[1-9][0-9]*\/comments$/;

/** A GitHub stand-in that records the path of every request it gets and answers 201 to all. */
function recordingGithub() {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    req.resume();
    req.on('end', () => res.writeHead(201, { 'content-type': 'application/json' }).end('{"html_url":"https://github.com/x"}'));
  });
  return { server, paths };
}

describe('sessions: the GitHub comment sender stays under /repos/ (no engines)', function () {
  const fake = recordingGithub();
  let base: string;
  before(async () => {
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}/api/v3`;
  });
  after(() => new Promise((resolve) => fake.server.close(resolve)));

  it('sends nothing for a malformed reference and posts a good one to its comments path', async () => {
    const guard = new OutboundGuard(['127.0.0.1']);
    for (const issue of BAD_REFS) {
      const answer = await postTrackerComment(guard, base, 'github', issue, 'body', 'github-token');
      expect(answer, issue).to.deep.include({ kind: 'refused' });
    }
    expect(fake.paths).to.deep.equal([]);
    expect(await postTrackerComment(guard, base, 'github', 'acme/.github#7', 'body', 'github-token')).to.deep.include({ kind: 'posted' });
    expect(fake.paths).to.deep.equal(['/api/v3/repos/acme/.github/issues/7/comments']);
  });
});

for (const { set, skip } of engineSets) describe(`sessions: GitHub issue references are checked where they enter and where they leave (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  const fake = recordingGithub();
  let t: TestNode;
  let org: Org;

  before(async () => {
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1'], githubApiUrl: url, trackerPollMs: 100, trackerRetryBaseMs: 50 } });
    org = await provisionOrg(t, 'Refs');
    const { db, secrets } = t.node.deps;
    const ownerId = (await t.inject('GET', '/api/cli/whoami', { token: org.ownerToken })).json.user.id as string;
    await upsertOAuthConnection(db, {
      orgId: org.orgId, provider: 'github', sealedTokens: secrets.seal(JSON.stringify({ access_token: 'github-token-1' }), connectionSealContext(org.orgId, 'github')),
      scope: null, expiresAt: null, connectedBy: ownerId, at: new Date(),
    });
  });
  after(async () => {
    await t?.close();
    await new Promise((resolve) => fake.server.close(resolve));
  });

  const sessionCount = async () => Number((await t.node.deps.db('sessions').where({ org_id: org.orgId }).count({ n: '*' }).first())?.n ?? 0);

  it('refuses a malformed GitHub reference at dispatch with 400 on trackerIssue, creating nothing', async () => {
    const before = await sessionCount();
    for (const trackerIssue of BAD_REFS) {
      const r = await t.inject('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'p', trackerIssue } });
      expect(r.status, `${trackerIssue}: ${r.text}`).to.equal(400);
      expect(r.json.code).to.equal('VALIDATION_FAILED');
      expect(r.json.details.field).to.equal('trackerIssue');
      expect(r.json.error).to.contain('owner/repo#number');
    }
    expect(await sessionCount()).to.equal(before);
    expect((await t.inject('GET', '/api/sessions', { token: org.apiKey })).json.sessions.filter((s: { trackerIssue: string | null }) => BAD_REFS.includes(s.trackerIssue ?? ''))).to.deep.equal([]);
    // The valid shapes still dispatch.
    await dispatch(t, org, { trackerIssue: 'acme/.github#5' });
    await dispatch(t, org, { trackerIssue: 'ENG-5' });
  });

  it('gives up a stored malformed reference with the reason recorded, sending nothing', async () => {
    const sessionId = await dispatch(t, org);
    // Rows inside the node name the session by its key (decision 0068).
    const key = await sessionKeyOf(t.node.deps.db, org.orgId, sessionId);
    const at = new Date();
    const rows = BAD_REFS.map((issue, i) => ({
      id: `bad-ref-${randomBytes(6).toString('hex')}`, org_id: org.orgId, session_id: key, epoch: i + 1, tracker: 'github', issue,
      kind: 'terminal', session_status: 'completed', cost_usd: 0, duration_ms: 1000, status: 'pending', attempts: 0,
      next_attempt_at: at, created_at: at, updated_at: at,
    }));
    await t.node.deps.db('tracker_comments').insert(rows);
    let comments: Array<{ issue: string; status: string; lastError: string | null }> = [];
    await eventually(async () => {
      comments = (await t.inject('GET', `/api/public/sessions/${sessionId}`, { token: org.apiKey })).json.trackerComments;
      return comments.length === BAD_REFS.length && comments.every((c) => c.status !== 'pending');
    }, 'stored malformed references settled', 20_000);
    for (const c of comments) {
      expect(c.status, c.issue).to.equal('failed');
      expect(c.lastError, c.issue).to.contain('names no GitHub issue');
    }
    expect(fake.paths.filter((p) => !COMMENTS_PATH.test(p))).to.deep.equal([]);
    expect(fake.paths).to.deep.equal([]);
  });
});
