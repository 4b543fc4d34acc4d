// Invariant (issue 32, "How we will judge it"): a client that has read only the spec (service-spec.md), the contract and
// the OpenAPI document the node serves works against Troupe over real HTTP, on both engine sets. It computes session ids
// from tracker ids itself (the first 16 hex of SHA-256), drives a session through a worker that uses the /api daemon
// paths, decides gates with the spec's words in either tense, configures the bare provider webhook URL routed by the
// provider's own account id, reads a schedule straight after publishing, and tells an API key from a user in whoami.
// Nothing here reads the repository's code: the node and orgs are provisioned as an operator would, the rest is HTTP.
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type CallResult, type TestNode } from '../../support/node.js';
import { provisionOrg, type Org } from '../sessions/support.js';

/** Spec 2.7: "a SHA-256 prefix of the tracker's session identifier", 16 characters (contract: hex). */
const publicIdOf = (trackerSessionId: string) => createHash('sha256').update(trackerSessionId, 'utf8').digest('hex').slice(0, 16);

/** Contract, workflow definitions: a v2 definition; `trigger.type` is `manual` or `schedule`. */
const gatedWorkflow = 'schemaVersion: v2\nname: ship\ntrigger: {type: manual}\nnodes:\n  - {id: gate, kind: approval, title: "Ship it?"}\nedges: []\n';
const nightlyWorkflow = (name: string) =>
  `schemaVersion: v2\nname: ${name}\ntrigger: {type: schedule, cron: "0 9 * * *"}\nnodes:\n  - {id: pause, kind: wait, seconds: 0}\nedges: []\n`;

for (const { set, skip } of engineSets) describe(`a client written from the spec alone (${set} engines)`, function () {
  if (skip) return;
  this.timeout(120_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;

  // The schedule scan runs far slower than the test, so only the publish itself can make a schedule readable in time.
  before(async () => {
    t = await startTestNode({ engines: set, config: { scheduleScanMs: 60_000 } });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
  });
  after(() => t?.close());

  const api = (method: string, path: string, token: string | undefined, body?: unknown) =>
    t.call(method, path, { ...(token === undefined ? {} : { token }), ...(body === undefined ? {} : { body }) });
  const dispatchAs = (org: Org, body: Record<string, unknown>) =>
    api('POST', '/api/agent-dispatch', org.apiKey, { projectId: org.projectId, ...body });

  it('addresses a session by the id it computes from its tracker id, and two orgs with one tracker id never meet', async () => {
    const tracker = `linear-session-${randomUUID()}`;
    const id = publicIdOf(tracker);
    const mine = await dispatchAs(acme, { prompt: 'acme: fix the login page', trackerSessionId: tracker });
    expect(mine.status, mine.text).to.equal(201);
    expect(mine.json.status).to.equal('pending');
    expect(mine.json.sessionId, 'the reply names the id the spec rule gives').to.equal(id);

    const theirs = await dispatchAs(globex, { prompt: 'globex: rotate the certificates', trackerSessionId: tracker });
    expect(theirs.status, theirs.text).to.equal(201);
    expect(theirs.json.sessionId, "the same tracker id in another org is the same public id").to.equal(id);

    const acmeView = await api('GET', `/api/public/sessions/${id}`, acme.apiKey);
    expect(acmeView.status, acmeView.text).to.equal(200);
    expect(acmeView.json).to.include({ id, status: 'pending' });
    expect(acmeView.text).to.include('acme: fix the login page').and.not.include('globex').and.not.include(globex.orgId);
    const globexView = await api('GET', `/api/public/sessions/${id}`, globex.apiKey);
    expect(globexView.status, globexView.text).to.equal(200);
    expect(globexView.text).to.include('globex: rotate the certificates').and.not.include('acme:').and.not.include(acme.orgId);

    const stopped = await api('POST', `/api/public/sessions/${id}/stop`, acme.apiKey);
    expect(stopped.status, stopped.text).to.equal(200);
    expect(stopped.json).to.deep.equal({ stopped: true, sessionId: id, previousStatus: 'pending', newStatus: 'stopped' });
    expect((await api('GET', `/api/public/sessions/${id}`, globex.apiKey)).json.status, "acme's stop leaves globex's session").to.equal('pending');

    // Spec 3.1: a prompt to a stopped session re-dispatches it (pending).
    const prompted = await api('POST', `/api/public/sessions/${id}/prompt`, acme.apiKey, { prompt: 'acme: try again with the new token' });
    expect(prompted.status, prompted.text).to.equal(200);
    expect(prompted.json).to.include({ delivered: true, sessionId: id, status: 'pending' });
    expect(prompted.json.promptId).to.be.a('string').and.not.equal('');
    expect((await api('GET', `/api/public/sessions/${id}`, acme.apiKey)).json.status).to.equal('pending');
    expect((await api('GET', `/api/public/sessions/${id}`, globex.apiKey)).text, "acme's prompt is not globex's").to.not.include('new token');

    const unknown = await api('GET', `/api/public/sessions/${publicIdOf(`never-${randomUUID()}`)}`, acme.apiKey);
    expectRefusal(unknown, 404);
  });

  it('runs a session through a worker on the /api daemon paths, reporting by the computed id, to completed', async () => {
    const registered = await api('POST', '/v1/daemon/register', undefined, { registrationToken: acme.registrationToken, hostname: 'spec-host', maxAgents: 2 });
    expect(registered.status, registered.text).to.equal(200);
    const { workerId, runtimeJwt } = registered.json as { workerId: string; runtimeJwt: string };
    expect(registered.json.heartbeatIntervalSeconds).to.be.a('number').and.satisfy(Number.isInteger);
    expect(registered.json.pollIntervalSeconds).to.be.a('number').and.satisfy(Number.isInteger);

    const beat = await api('POST', '/api/daemon/heartbeat', runtimeJwt, { workerId });
    expect(beat.status, beat.text).to.equal(200);
    expect(beat.json).to.include({ ok: true });
    expect(beat.json.mutations).to.deep.equal([]);

    const tracker = `worker-session-${randomUUID()}`;
    const id = publicIdOf(tracker);
    expect((await dispatchAs(acme, { prompt: 'acme: bump the dependencies', trackerSessionId: tracker })).status).to.equal(201);
    expect((await dispatchAs(globex, { prompt: 'globex: same tracker id, other org', trackerSessionId: tracker })).status).to.equal(201);

    const polled = await api('POST', '/api/daemon/poll', runtimeJwt, { workerId, capacity: 10 });
    expect(polled.status, polled.text).to.equal(200);
    const offers = (polled.json.sessions as { id: string; projectId: string; prompt: string }[]).filter((s) => s.id === id);
    expect(offers.map((s) => [s.projectId, s.prompt]), "offered acme's session only").to.deep.equal([[acme.projectId, 'acme: bump the dependencies']]);

    let previous = 'pending';
    for (const status of ['claimed', 'running', 'finalizing', 'completed']) {
      if (status === 'finalizing') {
        const step = await api('POST', `/api/sessions/${id}/step-heartbeat`, runtimeJwt, { workerId });
        expect([step.status, step.json], 'step heartbeat while running').to.deep.equal([200, { ok: true }]);
      }
      const moved = await api('POST', `/api/sessions/${id}/status`, runtimeJwt, { status, workerId, ...(status === 'completed' ? { costUsd: 0.5 } : {}) });
      expect(moved.status, `${status}: ${moved.text}`).to.equal(200);
      expect(moved.json).to.deep.equal({ sessionId: id, previousStatus: previous, newStatus: status });
      previous = status;
    }
    expect((await api('GET', `/api/public/sessions/${id}`, acme.apiKey)).json).to.include({ id, status: 'completed' });
    expect((await api('GET', `/api/public/sessions/${id}`, globex.apiKey)).json.status, "globex's twin is untouched").to.equal('pending');
    const stopAgain = await api('POST', `/api/public/sessions/${id}/stop`, acme.apiKey);
    expect(stopAgain.json, 'contract: stop on a terminal session').to.deep.equal({ stopped: false, sessionId: id, previousStatus: 'completed', newStatus: 'completed' });

    const doc = (await api('GET', '/api/openapi.json', undefined)).json;
    for (const operation of ['heartbeat', 'poll']) {
      expect(doc.paths[`/api/daemon/${operation}`]?.post, `/api/daemon/${operation} documented`).to.be.an('object');
      expect(doc.paths[`/api/daemon/${operation}`].post.deprecated, `/api/daemon/${operation} current`).to.not.equal(true);
      expect(doc.paths[`/v1/daemon/${operation}`]?.post?.deprecated, `/v1/daemon/${operation} deprecated`).to.equal(true);
    }
    expect(doc.paths['/v1/daemon/register']?.post?.deprecated, 'registration lives under /v1 (spec 9.6)').to.not.equal(true);
  });

  it('decides gates with approve, reject and escalate in either tense and answers in the past tense', async () => {
    const words = [['approve', 'approved'], ['approved', 'approved'], ['reject', 'rejected'], ['rejected', 'rejected'], ['escalate', 'escalated'], ['escalated', 'escalated']];
    for (const [word, pastTense] of words) {
      const opened = await api('POST', '/api/approval-gates', acme.ownerToken, { projectId: acme.projectId, title: `decide ${word}` });
      expect(opened.status, opened.text).to.equal(201);
      const gateId = opened.json.gate.id as string;
      const decided = await api('POST', `/api/approval-gates/${gateId}/decide`, acme.ownerToken, { decision: word, actorRole: 'owner' });
      expect(decided.status, `${word}: ${decided.text}`).to.equal(200);
      expect(decided.json, word).to.include({ resolved: true, decision: pastTense });
      const listed = (await api('GET', '/api/approval-gates', acme.ownerToken)).json.gates as { id: string; status: string }[];
      expect(listed.find((g) => g.id === gateId)?.status, word).to.equal(pastTense);
      expect((await api('GET', '/api/approval-gates', globex.ownerToken)).text, "another org's gate is not listed").to.not.include(gateId);
    }
  });

  it('fails a workflow run whose approval gate is rejected', async () => {
    const created = await api('POST', `/api/projects/${acme.projectId}/workflows`, acme.ownerToken, { name: 'ship', definitionYaml: gatedWorkflow });
    expect(created.status, created.text).to.equal(201);
    const workflowId = created.json.id as string;
    expect((await api('PATCH', `/api/workflows/${workflowId}`, acme.ownerToken, { status: 'published' })).status).to.equal(200);
    const started = await api('POST', `/api/workflows/${workflowId}/runs`, acme.ownerToken, {});
    expect(started.status, started.text).to.equal(201);
    const runId = started.json.runId as string;

    const gateId = await until(async () => ((await api('GET', '/api/approval-gates?status=pending', acme.ownerToken)).json.gates as { id: string; runId?: string }[])
      .find((g) => g.runId === runId)?.id, 'the run opens its gate');
    const decided = await api('POST', `/api/approval-gates/${gateId}/decide`, acme.ownerToken, { decision: 'reject' });
    expect(decided.status, decided.text).to.equal(200);
    expect(decided.json.decision).to.equal('rejected');
    const run = await until(async () => {
      const r = (await api('GET', `/api/workflow-runs/${runId}`, acme.ownerToken)).json;
      return r.status === 'failed' ? r : undefined;
    }, 'the run fails');
    expect(run).to.include({ runId, workflowId });
    expect((await api('GET', `/api/workflow-runs/${runId}`, globex.ownerToken)).status, "another org's run").to.equal(404);
  });

  it('takes a Linear delivery at the bare ingest path, routed by the account id the org registered; an unknown account is 401', async () => {
    const acmeSecret = randomBytes(24).toString('hex');
    const acmeAccount = randomUUID();
    const registered = await api('PUT', `/api/org/${acme.orgId}/integrations/linear`, acme.ownerToken, { signingSecret: acmeSecret, accountIds: [acmeAccount] });
    expect(registered.status, registered.text).to.equal(200);
    expect(registered.json.accountIds).to.deep.equal([acmeAccount]);
    const globexSetup = await api('PUT', `/api/org/${globex.orgId}/integrations/linear`, globex.ownerToken, { signingSecret: randomBytes(24).toString('hex'), accountIds: [randomUUID()] });
    expect(globexSetup.status, globexSetup.text).to.equal(200);

    const issue = `SPEC-${randomBytes(3).toString('hex').toUpperCase()}`;
    const delivered = await deliverLinear(t, linearIssueCreated(acmeAccount, issue), acmeSecret);
    expect(delivered.status, delivered.text).to.equal(200);
    expect(delivered.json).to.include({ ok: true, duplicate: false });
    expect(delivered.json.eventId).to.be.a('string').and.not.equal('');
    expect(delivered.json.correlationId).to.be.a('string').and.not.equal('');

    const sessionsFor = async (org: Org) => (await api('GET', `/api/sessions?trackerIssue=${issue}`, org.apiKey)).json.sessions as { trackerIssue: string }[];
    await until(async () => ((await sessionsFor(acme)).length === 1 ? true : undefined), "the issue dispatched a session in acme");
    expect(await sessionsFor(globex), 'and not in globex').to.deep.equal([]);

    const stranger = await deliverLinear(t, linearIssueCreated(randomUUID(), 'SPEC-0'), acmeSecret);
    expectRefusal(stranger, 401);
  });

  it('shows a scheduled workflow as scheduled the moment its publish answers', async () => {
    for (let i = 0; i < 5; i += 1) {
      const created = await api('POST', `/api/projects/${acme.projectId}/workflows`, acme.ownerToken, { name: `nightly-${i}`, definitionYaml: nightlyWorkflow(`nightly-${i}`) });
      expect(created.status, created.text).to.equal(201);
      const workflowId = created.json.id as string;
      expect((await api('PATCH', `/api/workflows/${workflowId}`, acme.ownerToken, { status: 'published' })).status).to.equal(200);
      const schedule = await api('GET', `/api/workflows/${workflowId}/schedule`, acme.ownerToken);
      expect(schedule.status, schedule.text).to.equal(200);
      expect(schedule.json.status, `nightly-${i} right after publish`).to.not.equal('none');
      expect(schedule.json.nextFireTimes, `nightly-${i} next fires`).to.be.an('array').that.is.not.empty;
      expect((await api('GET', `/api/workflows/${workflowId}/schedule`, globex.ownerToken)).status, "another org's schedule").to.equal(404);
    }
  });

  it('sees no user behind an API key in whoami, only the named key, and the person behind a user token', async () => {
    const asUser = await api('GET', '/api/cli/whoami', acme.ownerToken);
    expect(asUser.status, asUser.text).to.equal(200);
    expect(asUser.json.user).to.have.all.keys('id', 'email', 'firstName', 'lastName', 'profilePictureUrl');
    expect(asUser.json.org).to.include({ id: acme.orgId });
    const ownerId = asUser.json.user.id as string;

    const issued = await api('POST', `/api/org/${acme.orgId}/keys`, acme.ownerToken, { name: 'spec client key' });
    expect(issued.status, issued.text).to.equal(201);
    const asKey = await api('GET', '/api/cli/whoami', issued.json.fullKey);
    expect(asKey.status, asKey.text).to.equal(200);
    expect(asKey.json.user, 'a key acts as no user').to.equal(null);
    expect(asKey.json.apiKey).to.deep.equal({ id: issued.json.id, name: 'spec client key', createdBy: ownerId });
    expect(asKey.json.org).to.include({ id: acme.orgId });

    // Spec 4.5: the same key has no user identity to decide a gate with, which whoami now agrees with.
    const gate = await api('POST', '/api/approval-gates', acme.ownerToken, { projectId: acme.projectId, title: 'people only' });
    expectRefusal(await api('POST', `/api/approval-gates/${gate.json.gate.id}/decide`, issued.json.fullKey, { decision: 'approve' }), 403);
  });
});

/** Spec 7 and the contract: an error is `{error: string, code: SCREAMING_SNAKE}` with the stated status. */
function expectRefusal(r: CallResult, status: number): void {
  expect(r.status, r.text).to.equal(status);
  expect(r.json.error).to.be.a('string').and.not.equal('');
  expect(r.json.code).to.match(/^[A-Z][A-Z0-9_]*$/);
}

/** A Linear "Issue created" webhook body: Linear names the workspace in `organizationId`, the send time in ms. */
function linearIssueCreated(organizationId: string, identifier: string) {
  return {
    action: 'create', type: 'Issue', organizationId, webhookTimestamp: Date.now(),
    data: { id: randomUUID(), identifier, title: 'Checkout times out', description: 'Customers see a spinner forever.' },
  };
}

/** Posts as Linear does: `Linear-Signature` is the hex HMAC-SHA256 of the raw body under the webhook's secret. */
function deliverLinear(t: TestNode, body: unknown, secret: string): Promise<CallResult> {
  const raw = JSON.stringify(body);
  return t.call('POST', '/api/webhooks/ingest/linear', {
    rawBody: raw,
    headers: {
      'content-type': 'application/json', 'linear-delivery': randomUUID(), 'linear-event': 'Issue',
      'linear-signature': createHmac('sha256', secret).update(raw).digest('hex'),
    },
  });
}

/** Polls `probe` until it yields a value, as a client waiting on deferred work would. */
async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
