// Invariant: a session's agent output (the interview named by the session's id) belongs to the session's project:
// a worker registered for other projects of the same org can neither write into it nor read it, while the worker
// of that project and the org's people can; an interview id that names no session stays org-wide.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { insertProject } from '../../../storage/identity/orgs.js';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, type Daemon, type Org } from '../sessions/support.js';
import { openSse, type SseClient } from './sse-client.js';

for (const { set, skip } of engineSets) describe(`interview streams scoped to the session's project (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let secondProject: string;
  let firstWorker: Daemon;
  let secondWorker: Daemon;
  let sessionInSecond: string;
  const open: SseClient[] = [];

  async function workerFor(projectId: string, hostname: string): Promise<Daemon> {
    const issued = await t.inject('POST', `/api/org/${acme.orgId}/registration-tokens`, { token: acme.ownerToken, body: { name: hostname, projects: [projectId] } });
    expect(issued.status, issued.text).to.equal(201);
    const res = await t.inject('POST', '/v1/daemon/register', { body: { registrationToken: issued.json.registrationToken, hostname, maxAgents: 2 } });
    expect(res.status, res.text).to.equal(200);
    return { workerId: res.json.workerId, runtimeJwt: res.json.runtimeJwt };
  }

  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    secondProject = randomUUID();
    await insertProject(t.node.deps.db, { id: secondProject, orgId: acme.orgId, name: 'Second', slug: `second-${secondProject.slice(0, 8)}` });
    firstWorker = await workerFor(acme.projectId, 'first-host');
    secondWorker = await workerFor(secondProject, 'second-host');
    sessionInSecond = await dispatch(t, acme, { projectId: secondProject });
  });
  afterEach(() => { for (const c of open.splice(0)) c.close(); });
  after(() => t?.close());

  const sse = async (path: string, token: string) => {
    const c = await openSse(`${t.url}${path}`, { token });
    open.push(c);
    return c;
  };
  const post = (token: string, id: string, tokens: string[]) => t.inject('POST', `/api/interview/${id}/deltas`, { token, body: { tokens } });

  it('refuses a worker of another project both ways, and changes nothing', async () => {
    const watcher = await sse(`/api/interview/${sessionInSecond}/stream`, acme.ownerToken);
    expect(watcher.status).to.equal(200);
    const forged = await post(firstWorker.runtimeJwt, sessionInSecond, ['forged line']);
    expect(forged.status, forged.text).to.equal(403);
    expect(forged.json.code).to.be.a('string');
    expect((await sse(`/api/interview/${sessionInSecond}/stream`, firstWorker.runtimeJwt)).status).to.equal(403);

    expect((await post(secondWorker.runtimeJwt, sessionInSecond, ['real line'])).status).to.equal(202);
    await watcher.next((f) => f.event === 'interview.delta');
    expect(watcher.frames.flatMap((f) => f.data.tokens ?? [])).to.deep.equal(['real line']);
  });

  it('keeps an interview that names no session org-wide', async () => {
    expect((await post(firstWorker.runtimeJwt, 'builder-chat-1', ['a'])).status).to.equal(202);
    expect((await sse('/api/interview/builder-chat-1/stream', secondWorker.runtimeJwt)).status).to.equal(200);
  });
});
