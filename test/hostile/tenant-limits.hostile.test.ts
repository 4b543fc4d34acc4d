// Invariant (issue 30, items 1 and 2): one tenant cannot freeze or bloat a node for the others.
// - A webhook-trigger filter that could visit more than the limit is refused at publish; filters that pass are
//   matched under a delivery budget, so a signed, valid, large delivery against many workflows ends with its cut-off
//   recorded while another org's requests keep their pace.
// - A worker's agent output is limited in bytes per minute (429 naming the limit; another org's worker unaffected),
//   and what a node keeps of interview frames stays within its byte bounds, overall and per org, however many
//   made-up interviews a worker fills: another org's interview still resumes without a gap.
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { engineSets, startTestNode, type TestNode } from '../support/node.js';
import { provisionOrg, type ProvisionedOrg } from '../integration/governance/governance-fixtures.js';
import { deliverySettled } from '../integration/integrations/delivery-fixtures.js';
import { openSse, type SseClient } from '../integration/streams/sse-client.js';
import { findWebhookEvent } from '../../storage/integrations/webhook-events.js';
import { INTERVIEW_HISTORY_BYTES } from '../../actors/services/fleet/node-streams.js';
import { eventually } from '../support/transport.js';

const MiB = 1024 * 1024;

const workflowYaml = (name: string, filter: string) => `schemaVersion: v2
name: ${name}
trigger: {type: webhook, provider: github, event: issues, filter: ${filter}}
nodes:
  - {id: triage, kind: approval, title: "Triage?"}
edges: []
`;

/** How long sequential whoami calls over a socket take while `during` runs: the slowest and the median, in ms. */
async function paceOf(t: TestNode, token: string, during: Promise<unknown>): Promise<{ max: number; median: number }> {
  const took: number[] = [];
  let done = false;
  void during.finally(() => { done = true; });
  while (!done || took.length < 5) {
    const at = performance.now();
    const r = await t.call('GET', '/api/cli/whoami', { token });
    expect(r.status).to.equal(200);
    took.push(performance.now() - at);
  }
  took.sort((a, b) => a - b);
  return { max: took[took.length - 1]!, median: took[Math.floor(took.length / 2)]! };
}

for (const { set, skip } of engineSets) describe(`hostile: one tenant's load stays its own (${set} engines)`, function () {
  if (skip) return;
  this.timeout(180_000);
  let t: TestNode;
  let noisy: ProvisionedOrg;
  let quiet: ProvisionedOrg;
  const secret = randomBytes(20).toString('hex');
  const open: SseClient[] = [];

  before(async () => {
    t = await startTestNode({ engines: set, config: { rateLimitWorkerOutputBytesPerMinute: 6 * MiB } });
    noisy = await provisionOrg(t);
    quiet = await provisionOrg(t);
    const put = await t.inject('PUT', `/api/org/${noisy.orgId}/integrations/github`, { token: noisy.ownerToken, body: { signingSecret: secret } });
    expect(put.status, put.text).to.equal(200);
  });
  afterEach(() => { for (const c of open.splice(0)) c.close(); });
  after(async () => { await t?.close(); });

  const api = (method: string, path: string, body?: unknown) => t.inject(method, path, { token: noisy.ownerToken, ...(body === undefined ? {} : { body }) });

  it('refuses at publish a filter whose wildcards could visit more than the limit, naming the field', async () => {
    const res = await api('POST', `/api/projects/${noisy.projectId}/workflows`, {
      name: 'deep', definitionYaml: workflowYaml('deep', '{"a.*.*.*.*.*.*.*.*.*": 1}'),
    });
    expect(res.status, res.text).to.equal(400);
    expect(res.json).to.include({ code: 'VALIDATION_FAILED' });
    expect(res.json.error).to.match(/trigger\.filter.*could visit/);
    expect((await api('GET', `/api/projects/${noisy.projectId}/workflows`)).json.workflows ?? []).to.have.length(0);
  });

  it("cuts a large delivery off at its budget, records why, and keeps another org's pace", async () => {
    // 60 published workflows, each with the costliest filter allowed that never matches: together far past the budget.
    for (let i = 0; i < 60; i++) {
      const created = await api('POST', `/api/projects/${noisy.projectId}/workflows`, {
        name: `wide-${i}`, definitionYaml: workflowYaml(`wide-${i}`, `{"a.*.*.x": ${i + 1000}, "a.*.*.y": ${i + 2000}}`),
      });
      expect(created.status, created.text).to.equal(201);
      expect((await api('PATCH', `/api/workflows/${created.json.id}`, { status: 'published' })).status).to.equal(200);
    }
    const quietPace = await paceOf(t, quiet.apiKey, new Promise((resolve) => setTimeout(resolve, 300)));

    const payload = { action: 'opened', a: Array.from({ length: 200 }, () => Array.from({ length: 200 }, () => ({ x: 0, y: 0 }))) };
    const body = JSON.stringify(payload);
    const delivery = t.inject('POST', `/api/webhooks/ingest/github?org=${noisy.orgId}`, {
      rawBody: body,
      headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': await octokitSign(secret, body) },
    });
    const underLoad = await paceOf(t, quiet.apiKey, delivery);
    const answer = await delivery;
    expect(answer.status, answer.text).to.equal(200);
    await deliverySettled(t, noisy.orgId, answer.json.eventId);
    const event = await findWebhookEvent(t.node.deps.db, noisy.orgId, answer.json.eventId);
    expect(event?.status).to.equal('ignored');
    expect(String(event?.outcome.detail)).to.match(/filter budget of \d+ payload visits ran out; \d+ of 60 matching workflows were not considered/);
    // Before the budget, this one delivery held the event loop for seconds; now it yields between workflows.
    expect(underLoad.max, `quiet org's slowest whoami ${underLoad.max.toFixed(1)} ms (quiet: ${quietPace.max.toFixed(1)} ms)`).to.be.below(250);
  });

  async function worker(org: ProvisionedOrg, hostname: string): Promise<{ workerId: string; runtimeJwt: string }> {
    const issued = await t.inject('POST', `/api/org/${org.orgId}/registration-tokens`, { token: org.ownerToken, body: { name: hostname, projects: [org.projectId] } });
    expect(issued.status, issued.text).to.equal(201);
    const res = await t.inject('POST', '/v1/daemon/register', { body: { registrationToken: issued.json.registrationToken, hostname, maxAgents: 1 } });
    expect(res.status, res.text).to.equal(200);
    return res.json;
  }

  it("limits a worker's output in bytes, and keeps interview history within its bounds per org and in all", async () => {
    const flooder = await worker(noisy, 'flooder');
    const neighbour = await worker(quiet, 'neighbour');
    const watcher = await openSse(`${t.url}/api/interview/quiet-chat/stream`, { token: quiet.ownerToken });
    open.push(watcher);
    expect(watcher.status).to.equal(200);
    expect((await t.inject('POST', '/api/interview/quiet-chat/deltas', { token: neighbour.runtimeJwt, body: { tokens: ['hello'] } })).status).to.equal(202);
    const first = await watcher.next((f) => f.event === 'interview.delta');

    // 1 MB a post (2,000 tokens of 500 characters) into a new made-up interview each time, until refused.
    const tokens = Array.from({ length: 2000 }, () => 'x'.repeat(500));
    let accepted = 0;
    let refusal: Awaited<ReturnType<TestNode['inject']>> | undefined;
    for (let i = 0; i < 20 && refusal === undefined; i++) {
      const r = await t.inject('POST', `/api/interview/made-up-${i}/deltas`, { token: flooder.runtimeJwt, body: { tokens } });
      if (r.status === 202) accepted++;
      else refusal = r;
    }
    expect(accepted, 'posts accepted before the limit').to.be.within(4, 6);
    expect(refusal?.status).to.equal(429);
    expect(refusal?.json).to.include({ code: 'RATE_LIMITED' });
    expect(refusal?.json.error).to.match(/TROUPE_RATE_LIMIT_WORKER_OUTPUT_BYTES_PER_MINUTE/);
    expect(Number(refusal?.headers.get('retry-after'))).to.be.within(1, 60);

    const streams = t.node.deps.services.streams;
    await eventually(async () => streams.interviews.usage(noisy.orgId).bytes > MiB, 'the flood reached this node');
    expect(streams.interviews.usage(noisy.orgId).bytes).to.be.at.most(INTERVIEW_HISTORY_BYTES.orgBytes);
    expect(streams.interviews.usage().bytes).to.be.at.most(INTERVIEW_HISTORY_BYTES.totalBytes);
    const metrics = await t.call('GET', '/metrics');
    const gauge = /troupe_stream_history_bytes\{[^}]*stream="interviews"[^}]*\} (\d+)/.exec(metrics.text);
    expect(Number(gauge?.[1])).to.be.within(MiB, INTERVIEW_HISTORY_BYTES.totalBytes);

    // The other org: its worker still posts, and its interview resumes after its first frame without a reset.
    expect((await t.inject('POST', '/api/interview/quiet-chat/deltas', { token: neighbour.runtimeJwt, body: { tokens: ['still here'] } })).status).to.equal(202);
    await watcher.next((f) => f.event === 'interview.delta' && f.data.tokens.includes('still here'));
    const resumed = await openSse(`${t.url}/api/interview/quiet-chat/stream`, { token: quiet.ownerToken, lastEventId: first.id! });
    open.push(resumed);
    const next = await resumed.next(() => true);
    expect(next.event, 'no reset: the quiet org kept its history').to.equal('interview.delta');
    expect(next.data.tokens).to.deep.equal(['still here']);
  });
});
