// Invariant (issue 35 §3, decision 0088): an agent reaches its team only through `troupe mcp` with the token of its
// own session's run. request_approval opens a gate linked to the session (in the inbox, the session `waiting for
// approval` meanwhile) and answers what a person decided; a stop ends the wait with `ended`; approval_prompt is
// allowed at once where an org policy permits `agent-tool` on the tool, and otherwise decided by a person who sees the
// tool and its input; report_progress is a timeline step. The token acts for no other session (404), no other org
// (404), no other route (401), and dies with its run (401).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';
import { sessionKeyOf } from '../../support/session-keys.js';
import { appendProgress } from '../../../storage/sessions/agent-line.js';
import { sessionAddress } from '../../../actors/kinds/session/index.js';

/** `probe`'s value once it stops throwing, or its last error after `timeoutMs`. */
async function until<T>(probe: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await probe();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Long enough to outlast an HTTP idle timeout of the edge (uWS: 10 s) if the edge had one for a pending reply. */
const WAIT_PROBE_SECONDS = 12;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

interface Line { readonly client: Client; readonly sessionId: string; readonly token: string }

const textOf = (result: unknown): string => ((result as { content: Array<{ text: string }> }).content[0]!.text);
const jsonOf = (result: unknown): Record<string, any> => JSON.parse(textOf(result)) as Record<string, any>;

for (const { set, skip } of engineSets) describe(`troupe mcp: the agent's line to the team (${set} engines)`, function () {
  if (skip) return;
  this.timeout(120_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let worker: Daemon;
  let globexWorker: Daemon;
  const clients: Client[] = [];

  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
    worker = await registerDaemon(t, acme, 'acme-1');
    globexWorker = await registerDaemon(t, globex, 'globex-1');
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await t?.close();
  });

  const running = async (org = acme, d = worker, extra: Record<string, unknown> = {}) => {
    const id = await dispatch(t, org, extra);
    for (const status of ['claimed', 'running']) expect((await report(t, d, id, status)).status).to.equal(200);
    return id;
  };
  const mint = async (id: string, d = worker) => {
    const res = await t.inject('POST', `/api/sessions/${id}/agent-token`, { token: d.runtimeJwt, body: { workerId: d.workerId } });
    expect(res.status, res.text).to.equal(201);
    return res.json.token as string;
  };
  /** A session running on `worker`, and an MCP client talking to `troupe mcp` for it, as an agent would. */
  const line = async (org = acme, d = worker): Promise<Line> => {
    const sessionId = await running(org, d);
    const token = await mint(sessionId, d);
    const transport = new StdioClientTransport({
      command: process.execPath, args: [path.join(root, 'ops/cli/bin.js'), 'mcp'], cwd: root, stderr: 'pipe',
      env: { PATH: process.env.PATH ?? '', TROUPE_URL: t.url, TROUPE_SESSION_TOKEN: token, TROUPE_SESSION_ID: sessionId },
    });
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return { client, sessionId, token };
  };
  const detail = async (id: string, org = acme) => (await t.inject('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json;
  const pendingGateOf = async (sessionId: string, org = acme) => until(async () => {
    const res = await t.inject('GET', '/api/approval-gates?for=me', { token: org.ownerToken });
    const gate = (res.json.gates as Array<Record<string, any>>).find((g) => g.sessionId === sessionId && g.status === 'pending');
    if (!gate) throw new Error('no pending gate yet');
    return gate;
  }, 20_000);
  const decide = (gateId: string, decision: string, comment?: string) =>
    t.inject('POST', `/api/approval-gates/${gateId}/decide`, { token: acme.ownerToken, body: { decision, ...(comment ? { comment } : {}) } });

  it('lists its four tools', async () => {
    const { client } = await line();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).to.deep.equal(['approval_prompt', 'post_tracker_comment', 'report_progress', 'request_approval']);
  });

  it('request_approval waits for a person: a gate in the inbox, the session waiting, then the approval and who gave it', async () => {
    const { client, sessionId } = await line();
    const asked = client.callTool({ name: 'request_approval', arguments: { summary: 'Run the orders migration', details: 'ALTER TABLE orders ...' } }, undefined, { timeout: 60_000 });
    const gate = await pendingGateOf(sessionId);
    expect(gate).to.include({ title: 'Agent asks: Run the orders migration', projectId: acme.projectId, mayDecide: true });
    expect((await detail(sessionId)).phase).to.equal('waiting for approval');
    const shown = await t.inject('GET', `/api/approval-gates/${gate.id}/agent-request`, { token: acme.memberToken });
    expect(shown.status, shown.text).to.equal(200);
    expect(shown.json).to.include({ sessionId, kind: 'approval', summary: 'Run the orders migration', details: 'ALTER TABLE orders ...', tool: null });
    expect((await t.inject('GET', `/api/approval-gates/${gate.id}/agent-request`, { token: globex.apiKey })).status, 'another org').to.equal(404);

    expect((await decide(gate.id, 'approve', 'go ahead, off-peak')).status).to.equal(200);
    const answer = jsonOf(await asked);
    const owner = (await t.inject('GET', '/api/cli/whoami', { token: acme.ownerToken })).json.user;
    expect(answer).to.deep.equal({ decision: 'approved', comment: 'go ahead, off-peak', decidedBy: owner.email });
    await until(async () => expect((await detail(sessionId)).phase).to.equal('approval decided'), 5_000);
  });

  it('a denial is answered as rejected, with the comment', async () => {
    const { client, sessionId } = await line();
    const asked = client.callTool({ name: 'request_approval', arguments: { summary: 'Drop the staging database' } }, undefined, { timeout: 60_000 });
    const gate = await pendingGateOf(sessionId);
    expect((await decide(gate.id, 'reject', 'not today')).status).to.equal(200);
    expect(jsonOf(await asked)).to.include({ decision: 'rejected', comment: 'not today' });
  });

  it('a stop of the session ends the wait with `ended`, and the token dies with the run', async () => {
    const { client, sessionId, token } = await line();
    const asked = client.callTool({ name: 'request_approval', arguments: { summary: 'Deploy to production' } }, undefined, { timeout: 60_000 });
    await pendingGateOf(sessionId);
    const started = Date.now();
    expect((await t.inject('POST', `/api/public/sessions/${sessionId}/stop`, { token: acme.apiKey, body: {} })).status).to.be.oneOf([200, 202]);
    const answer = jsonOf(await asked);
    expect(Date.now() - started, 'the stop wakes the wait, well before its fallback look at 5 s').to.be.below(2_500);
    expect(answer).to.include({ decision: 'ended', comment: null, decidedBy: null });
    expect(answer.reason).to.match(/stopped/);
    const after = await t.inject('POST', `/api/sessions/${sessionId}/agent/progress`, { headers: { authorization: `Bearer ${token}` }, body: { message: 'still here' } });
    expect(after.status, after.text).to.equal(401);
    const progress = await client.callTool({ name: 'report_progress', arguments: { message: 'still here' } });
    expect((progress as { isError?: boolean }).isError).to.equal(true);
    expect(textOf(progress)).to.match(/401/);
  });

  it('a decision wakes a held wait at once, well before its fallback look at 5 s', async () => {
    const id = await running();
    const bearer = { authorization: `Bearer ${await mint(id)}` };
    const opened = await t.inject('POST', `/api/sessions/${id}/agent/approvals`, { headers: bearer, body: { summary: 'Rotate the keys' } });
    const waiting = t.call('GET', `/api/sessions/${id}/agent/approvals/${opened.json.id}?waitSeconds=20`, { headers: bearer });
    // Past the wait's first read, so that only the announcement of the decision can end it early.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const decided = Date.now();
    expect((await decide(opened.json.id, 'approve')).status).to.equal(200);
    const res = await waiting;
    expect(res.json.status).to.equal('approved');
    expect(Date.now() - decided).to.be.below(2_500);
  });

  it('a wait with nothing to tell answers pending once its time is up, and the request stays open', async () => {
    const id = await running();
    const bearer = { authorization: `Bearer ${await mint(id)}` };
    const opened = await t.inject('POST', `/api/sessions/${id}/agent/approvals`, { headers: bearer, body: { summary: 'Wait for me' } });
    const started = Date.now();
    const res = await t.call('GET', `/api/sessions/${id}/agent/approvals/${opened.json.id}?waitSeconds=${WAIT_PROBE_SECONDS}`, { headers: bearer });
    expect(res.status, res.text).to.equal(200);
    expect(res.json).to.include({ status: 'pending', sessionStatus: 'running' });
    expect(Date.now() - started).to.be.within(WAIT_PROBE_SECONDS * 1000 - 100, WAIT_PROBE_SECONDS * 1000 + 3_000);
    expect((await t.inject('GET', `/api/sessions/${id}/agent/approvals/${opened.json.id}?waitSeconds=31`, { headers: bearer })).status, 'over 30 s').to.equal(400);
  });

  it('a run may wait on at most 20 undecided requests; a decision frees a place', async () => {
    const id = await running();
    const bearer = { authorization: `Bearer ${await mint(id)}` };
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await t.inject('POST', `/api/sessions/${id}/agent/approvals`, { headers: bearer, body: { summary: `step ${i}` } });
      expect(res.status, res.text).to.equal(201);
      ids.push(res.json.id as string);
    }
    const over = await t.inject('POST', `/api/sessions/${id}/agent/tool-permissions`, { headers: bearer, body: { toolName: 'Bash', input: { command: 'ls' } } });
    expect(over.status).to.equal(409);
    expect(over.json.error).to.match(/20 undecided requests/);
    expect((await decide(ids[0]!, 'approve')).status).to.equal(200);
    expect((await t.inject('POST', `/api/sessions/${id}/agent/approvals`, { headers: bearer, body: { summary: 'one more' } })).status).to.equal(201);
  });

  it('answers a request retried with its key with the gate it opened, never a second one', async () => {
    const id = await running();
    const bearer = { authorization: `Bearer ${await mint(id)}` };
    const ask = () => t.inject('POST', `/api/sessions/${id}/agent/approvals`, { headers: bearer, body: { summary: 'Deploy?', key: 'deploy-1' } });
    const first = await ask();
    expect(first.status, first.text).to.equal(201);
    const again = await ask();
    expect(again.status, again.text).to.equal(201);
    expect(again.json).to.deep.equal(first.json);
    const gates = (await t.inject('GET', '/api/approval-gates', { token: acme.ownerToken })).json.gates as Array<{ sessionId: string }>;
    expect(gates.filter((g) => g.sessionId === id), 'one gate for the two tries').to.have.length(1);
    expect((await decide(first.json.id as string, 'approve')).status).to.equal(200);
    const afterDecision = await ask();
    expect(afterDecision.json.id, 'a retry after the decision still names the decided gate').to.equal(first.json.id);
    const tool = (k: string) => t.inject('POST', `/api/sessions/${id}/agent/tool-permissions`, { headers: bearer, body: { toolName: 'Bash', input: { command: 'ls' }, key: k } });
    expect((await tool('t1')).json.request.id).to.equal((await tool('t1')).json.request.id);
    expect((await tool('t2')).json.request.id, 'another key, another request').to.not.equal((await tool('t1')).json.request.id);
  });

  it('holds the cap when requests come at once, and lets a run hold at most 4 waits on a node', async () => {
    const id = await running();
    const bearer = { authorization: `Bearer ${await mint(id)}` };
    const burst = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      t.call('POST', `/api/sessions/${id}/agent/approvals`, { headers: bearer, body: { summary: `at once ${i}` } })));
    expect(burst.filter((r) => r.status === 201), 'counted and written under one lock').to.have.length(20);
    expect(burst.filter((r) => r.status === 409)).to.have.length(10);

    const gate = burst.find((r) => r.status === 201)!.json.id as string;
    const waits = await Promise.all(Array.from({ length: 6 }, () =>
      t.call('GET', `/api/sessions/${id}/agent/approvals/${gate}?waitSeconds=2`, { headers: bearer })));
    expect(waits.map((r) => r.status).sort()).to.deep.equal([200, 200, 200, 200, 429, 429]);
    expect(waits.find((r) => r.status === 429)!.headers.get('retry-after')).to.equal('1');
  });

  it('a progress report past the run\'s cap is refused, and a retry of one already written is answered as written', async () => {
    const id = await running();
    const key = await sessionKeyOf(t.node.deps.db, acme.orgId, id);
    const at = new Date();
    const report = (k: string) => appendProgress(t.node.deps.db, acme.orgId, key, 1, k, `step ${k}`, at, 2);
    expect(await report('a')).to.deep.equal({ live: true, inserted: true, full: false });
    expect(await report('b')).to.deep.equal({ live: true, inserted: true, full: false });
    expect(await report('c'), 'a third report of a run capped at two').to.deep.equal({ live: true, inserted: false, full: true });
    expect(await report('a'), 'a retry of the first, after the cap').to.deep.equal({ live: true, inserted: false, full: false });
  });

  it("report_progress is a step on the session's timeline", async () => {
    const { client, sessionId } = await line();
    expect(jsonOf(await client.callTool({ name: 'report_progress', arguments: { message: 'Tests pass; opening the pull request' } }))).to.deep.equal({ recorded: true });
    const activities = (await detail(sessionId)).activities as Array<{ kind: string; body: string }>;
    expect(activities.filter((a) => a.kind === 'agent.progress').map((a) => a.body)).to.deep.equal(['Tests pass; opening the pull request']);
  });

  it('post_tracker_comment on a session from no tracker issue is a tool error naming why', async () => {
    const { client } = await line();
    const result = await client.callTool({ name: 'post_tracker_comment', arguments: { text: 'Done.' } });
    expect((result as { isError?: boolean }).isError).to.equal(true);
    expect(textOf(result)).to.match(/409 CONFLICT.*no tracker issue/);
  });

  it('approval_prompt: allowed at once where policy permits the tool; otherwise a person sees the tool and its input', async () => {
    const policy = await t.inject('POST', '/api/policies', {
      token: acme.ownerToken,
      body: { name: 'agents may read', cedarPolicy: 'permit (principal is Troupe::Worker, action == Troupe::Action::"agent-tool", resource == Troupe::AgentTool::"Read");' },
    });
    expect(policy.status, policy.text).to.equal(201);
    const { client, sessionId } = await line();
    const read = jsonOf(await until(async () => {
      const r = await client.callTool({ name: 'approval_prompt', arguments: { tool_name: 'Read', input: { file_path: '/repo/README.md' } } }, undefined, { timeout: 10_000 });
      if (jsonOf(r).behavior !== 'allow') throw new Error('policy not applied yet');
      return r;
    }, 10_000));
    expect(read).to.deep.equal({ behavior: 'allow', updatedInput: { file_path: '/repo/README.md' } });
    const own = jsonOf(await client.callTool({ name: 'approval_prompt', arguments: { tool_name: 'mcp__troupe__report_progress', input: { message: 'hi' } } }));
    expect(own, "the line's own tools need no one's leave").to.deep.equal({ behavior: 'allow', updatedInput: { message: 'hi' } });
    const gates = (await t.inject('GET', '/api/approval-gates', { token: acme.ownerToken })).json.gates as Array<{ sessionId: string }>;
    expect(gates.filter((g) => g.sessionId === sessionId), 'policy decided: nobody was asked').to.have.length(0);

    const input = { command: 'rm -rf build/', description: 'clean' };
    const bash = client.callTool({ name: 'approval_prompt', arguments: { tool_name: 'Bash', input } }, undefined, { timeout: 60_000 });
    const gate = await pendingGateOf(sessionId);
    expect(gate.title).to.equal(`Agent tool Bash: ${JSON.stringify(input)}`);
    const shown = (await t.inject('GET', `/api/approval-gates/${gate.id}/agent-request`, { token: acme.ownerToken })).json;
    expect(shown).to.deep.include({ kind: 'tool', tool: { name: 'Bash', input } });
    expect((await decide(gate.id, 'approve')).status).to.equal(200);
    expect(jsonOf(await bash)).to.deep.equal({ behavior: 'allow', updatedInput: input });

    const write = client.callTool({ name: 'approval_prompt', arguments: { tool_name: 'Write', input: { file_path: '/etc/passwd' } } }, undefined, { timeout: 60_000 });
    const second = await pendingGateOf(sessionId);
    expect((await decide(second.id, 'reject', 'outside the repository')).status).to.equal(200);
    const denied = jsonOf(await write);
    expect(denied.behavior).to.equal('deny');
    expect(denied.message).to.match(/rejected.*outside the repository/);
  });

  it("refuses a token on another session (404), of another org's session (404), on other routes (401), and other credentials (401)", async () => {
    const a = await running();
    const b = await running();
    const foreign = await running(globex, globexWorker);
    const tokenA = await mint(a);
    const bearer = { authorization: `Bearer ${tokenA}` };
    const gate = await t.inject('POST', `/api/sessions/${a}/agent/approvals`, { headers: bearer, body: { summary: 'ok' } });
    expect(gate.status, gate.text).to.equal(201);
    const agentRoutes = (id: string): Array<[string, string, Record<string, unknown> | undefined]> => [
      ['POST', `/api/sessions/${id}/agent/approvals`, { summary: 'x' }],
      ['POST', `/api/sessions/${id}/agent/tool-permissions`, { toolName: 'Bash', input: {} }],
      ['GET', `/api/sessions/${id}/agent/approvals/${gate.json.id}?waitSeconds=0`, undefined],
      ['POST', `/api/sessions/${id}/agent/progress`, { message: 'x' }],
      ['POST', `/api/sessions/${id}/agent/tracker-comments`, { text: 'x' }],
    ];
    for (const other of [b, foreign]) {
      for (const [method, url, body] of agentRoutes(other)) {
        const res = await t.inject(method, url, { headers: bearer, ...(body ? { body } : {}) });
        expect(res.status, `${method} ${url}`).to.equal(404);
      }
    }
    // A runtime JWT, an API key, no credential: not a session token.
    for (const headers of [{ authorization: `Bearer ${worker.runtimeJwt}` }, { authorization: `Bearer ${acme.apiKey}` }, {}] as Record<string, string>[]) {
      const res = await t.inject('POST', `/api/sessions/${a}/agent/progress`, { headers, body: { message: 'x' } });
      expect(res.status).to.equal(401);
    }
    // The session token opens nothing else.
    expect((await t.inject('GET', `/api/public/sessions/${a}`, { headers: bearer })).status).to.equal(401);
    expect((await t.inject('GET', '/api/approval-gates', { headers: bearer })).status).to.equal(401);
    // Only the worker holding the session gets a token for it; another org's worker does not find it.
    expect((await t.inject('POST', `/api/sessions/${a}/agent-token`, { token: globexWorker.runtimeJwt, body: { workerId: globexWorker.workerId } })).status).to.equal(404);
    const other = await registerDaemon(t, acme, 'acme-2');
    expect((await t.inject('POST', `/api/sessions/${a}/agent-token`, { token: other.runtimeJwt, body: { workerId: other.workerId } })).status).to.equal(409);
    // A run reclaimed from its worker (a lost lease) and claimed by another keeps its epoch, not its old token.
    const reclaimed = await running();
    const oldToken = await mint(reclaimed);
    await t.node.deps.ask(sessionAddress(await sessionKeyOf(t.node.deps.db, acme.orgId, reclaimed)), { type: 'session.leaseExpired', workerId: worker.workerId });
    expect((await report(t, other, reclaimed, 'claimed')).status).to.equal(200);
    const stale = await t.inject('POST', `/api/sessions/${reclaimed}/agent/progress`, { headers: { authorization: `Bearer ${oldToken}` }, body: { message: 'x' } });
    expect(stale.status, 'the old worker\'s token').to.equal(401);
    const fresh = await t.inject('POST', `/api/sessions/${reclaimed}/agent/progress`, { headers: { authorization: `Bearer ${await mint(reclaimed, other)}` }, body: { message: 'x' } });
    expect(fresh.status, 'the new holder\'s token').to.equal(201);
    // A well-formed request that asks nothing: 400, nothing opened.
    const bad = await t.inject('POST', `/api/sessions/${a}/agent/approvals`, { headers: bearer, body: { summary: '' } });
    expect(bad.status).to.equal(400);
  });
});
