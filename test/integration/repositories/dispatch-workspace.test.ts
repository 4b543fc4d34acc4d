// Invariant: a dispatch names one of its project's repositories by id, name or URL, a ref (the repository's default
// branch when none) and an agent preset; the session detail shows the repository and ref, and every offer of the
// session (the poll's and the one pushed on the daemon event stream) carries them with its run. A repository the project
// does not have (another org's included), a malformed ref or an unknown preset is 400 on that field and creates no
// session. A workflow agent node naming a repository dispatches its session on it; one naming none the project has
// fails its step with the reason.
import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { openSse, type SseClient } from '../streams/sse-client.js';
import { provisionOrg, registerDaemon, type Org } from '../sessions/support.js';
import { registered } from './support.js';

const publicIdOf = (tracker: string): string => createHash('sha256').update(tracker).digest('hex').slice(0, 16);

for (const { set, skip } of engineSets) describe(`dispatch on a repository (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let widgets: { id: string; url: string; name: string; defaultBranch: string };
  let theirs: { id: string; url: string; name: string };
  const streams: SseClient[] = [];
  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
    widgets = await registered(t, acme, { url: 'git@github.com:acme/widgets.git', defaultBranch: 'trunk' });
    theirs = await registered(t, globex, { url: 'https://github.com/globex/plans.git' });
  });
  after(async () => {
    for (const s of streams) s.close();
    await t?.close();
  });

  const dispatch = (body: Record<string, unknown>, org = acme) =>
    t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Fix the flaky test', ...body } });
  const detail = async (id: string) => (await t.call('GET', `/api/public/sessions/${id}`, { token: acme.apiKey })).json;

  it('takes the repository by id, name or URL and a ref (the default branch by default), and the detail shows both', async () => {
    const asWidgets = { id: widgets.id, url: widgets.url, name: 'widgets', defaultBranch: 'trunk' };
    const cases: [Record<string, unknown>, string][] = [
      [{ repository: widgets.id, ref: 'feature/login-fix' }, 'feature/login-fix'],
      [{ repository: 'widgets' }, 'trunk'],
      [{ repository: widgets.url, ref: 'a'.repeat(40) }, 'a'.repeat(40)],
      [{ repository: 'widgets', ref: 'v2.1.0' }, 'v2.1.0'],
    ];
    for (const [body, ref] of cases) {
      const res = await dispatch(body);
      expect(res.status, res.text).to.equal(201);
      expect(await detail(res.json.sessionId), JSON.stringify(body)).to.deep.include({ repository: asWidgets, ref });
    }
    const plain = await dispatch({});
    expect(await detail(plain.json.sessionId)).to.deep.include({ repository: null, ref: null });
  });

  it('refuses a repository the project lacks, a bad ref, a ref without a repository or an unknown agent with 400 on the field, creating nothing', async () => {
    const refusals: [Record<string, unknown>, string][] = [
      [{ repository: 'nope' }, 'repository'],
      [{ repository: randomUUID() }, 'repository'],
      [{ repository: theirs.id }, 'repository'],
      [{ repository: 'plans' }, 'repository'],
      [{ repository: theirs.url }, 'repository'],
      [{ repository: 'widgets', ref: '-ufoo' }, 'ref'],
      [{ repository: 'widgets', ref: '--upload-pack=touch' }, 'ref'],
      [{ repository: 'widgets', ref: 'a..b' }, 'ref'],
      [{ repository: 'widgets', ref: 'feature/' }, 'ref'],
      [{ repository: 'widgets', ref: 'has space' }, 'ref'],
      [{ repository: 'widgets', ref: 'x'.repeat(201) }, 'ref'],
      [{ ref: 'main' }, 'ref'],
      [{ repository: 'widgets', agent: 'bash' }, 'agent'],
    ];
    for (const [body, field] of refusals) {
      const tracker = `refused-${randomUUID()}`;
      const res = await dispatch({ ...body, trackerSessionId: tracker });
      expect([res.status, res.json.code, res.json.details?.field], JSON.stringify(body)).to.deep.equal([400, 'VALIDATION_FAILED', field]);
      const absent = await t.call('GET', `/api/public/sessions/${publicIdOf(tracker)}`, { token: acme.apiKey });
      expect(absent.status, `no session for ${JSON.stringify(body)}`).to.equal(404);
    }
  });

  it('offers carry the repository, ref, agent and run, on the poll and pushed on the event stream, to its own org only', async () => {
    const worker = await registerDaemon(t, acme, 'acme-host');
    const foreign = await registerDaemon(t, globex, 'globex-host');
    const stream = await openSse(`${t.url}/api/daemon/events`, { token: worker.runtimeJwt });
    const foreignStream = await openSse(`${t.url}/api/daemon/events`, { token: foreign.runtimeJwt });
    streams.push(stream, foreignStream);
    await Promise.all([stream.next((f) => f.event === 'ready'), foreignStream.next((f) => f.event === 'ready')]);
    const res = await dispatch({ repository: 'widgets', ref: 'release/1.4', agent: 'claude-code' });
    const id = res.json.sessionId as string;
    const expected = {
      id, projectId: acme.projectId, prompt: 'Fix the flaky test', run: 1, ref: 'release/1.4', agent: 'claude-code',
      repository: { id: widgets.id, url: widgets.url, name: 'widgets', defaultBranch: 'trunk' },
    };
    const pushed = await stream.next((f) => f.event === 'offer' && f.data.session.id === id, 2000);
    expect(pushed.data.session).to.deep.equal(expected);
    const poll = await t.call('POST', '/api/daemon/poll', { token: worker.runtimeJwt, body: { workerId: worker.workerId, capacity: 100 } });
    expect(poll.json.sessions.find((s: { id: string }) => s.id === id)).to.deep.equal(expected);
    const foreignPoll = await t.call('POST', '/api/daemon/poll', { token: foreign.runtimeJwt, body: { workerId: foreign.workerId, capacity: 100 } });
    expect(JSON.stringify(foreignPoll.json)).to.not.contain(id).and.not.contain('widgets');
    expect(foreignStream.frames.filter((f) => f.event !== 'ready')).to.deep.equal([]);
  });

  it('dispatches a workflow agent node on the repository it names; a node naming one the project lacks fails its step', async () => {
    const yaml = (repository: string, ref: string) => [
      'schemaVersion: v2', `name: on-${repository}`, 'trigger: {type: manual}', 'nodes:',
      `  - {id: fix, kind: agent, prompt: "Fix it", repository: "${repository}", ref: "${ref}", priority: 8}`, 'edges: []', '',
    ].join('\n');
    const start = async (repository: string, ref: string): Promise<string> => {
      const wf = await t.call('POST', `/api/projects/${acme.projectId}/workflows`, { token: acme.ownerToken, body: { name: `wf-${randomUUID()}`, definitionYaml: yaml(repository, ref) } });
      expect(wf.status, wf.text).to.equal(201);
      const published = await t.call('PATCH', `/api/workflows/${wf.json.id}`, { token: acme.ownerToken, body: { status: 'published' } });
      expect(published.status, published.text).to.equal(200);
      const run = await t.call('POST', `/api/workflows/${wf.json.id}/runs`, { token: acme.ownerToken, body: {} });
      expect(run.status, run.text).to.equal(201);
      return run.json.runId as string;
    };
    const runOf = async (runId: string) => (await t.call('GET', `/api/workflow-runs/${runId}`, { token: acme.ownerToken })).json;

    const ok = await start('widgets', 'hotfix/42');
    let sessionId: string | undefined;
    // The step names its session as the run persists it; the session is dispatched just after.
    await eventually(async () => {
      sessionId = (await runOf(ok)).steps.find((s: { nodeId: string }) => s.nodeId === 'fix')?.sessionId;
      return sessionId !== undefined && (await t.call('GET', `/api/public/sessions/${sessionId}`, { token: acme.apiKey })).status === 200;
    }, 'the agent step dispatched');
    expect(await detail(sessionId!)).to.deep.include({ ref: 'hotfix/42', repository: { id: widgets.id, url: widgets.url, name: 'widgets', defaultBranch: 'trunk' } });
    // The node's priority, and the key of its repository and ref (decision 0081).
    expect(await detail(sessionId!)).to.deep.include({ priority: 8, concurrencyKey: `repo:${widgets.id}:hotfix/42` });

    const missing = await start('plans', 'main');
    await eventually(async () => (await runOf(missing)).status === 'failed', 'the run with a missing repository failed');
    const errors = ((await runOf(missing)).steps as { error?: string }[]).map((s) => s.error ?? '').join('\n');
    expect(errors).to.contain('the project has no repository "plans"');

    for (const [what, definitionYaml] of [['a bad ref', yaml('widgets', '-x')], ['a ref without a repository', yaml('widgets', 'main').replace(' repository: "widgets",', '')],
      ['a priority past 9', yaml('widgets', 'main').replace('priority: 8', 'priority: 10')]]) {
      const wf = await t.call('POST', `/api/projects/${acme.projectId}/workflows`, { token: acme.ownerToken, body: { name: `wf-${randomUUID()}`, definitionYaml } });
      const refused = wf.status === 201 ? await t.call('PATCH', `/api/workflows/${wf.json.id}`, { token: acme.ownerToken, body: { status: 'published' } }) : wf;
      expect(refused.status, `${what}: ${refused.text}`).to.equal(400);
    }
  });
});
