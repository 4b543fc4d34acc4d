// Invariant: what the console reads beyond the original API (sessions by status and project, a session's timeline
// and what the caller may do with it, the org's workers, gates waiting on me, a version snapshot, a workflow's runs,
// the session probe) is org-scoped (another org's resource is 404, or simply absent from a list), refuses bad input
// with 400, and tells the truth about permissions; and the node serves the page itself, compressed, with a strict
// Content-Security-Policy.
import http from 'node:http';
import { brotliDecompressSync } from 'node:zlib';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { consoleOrg, PASSWORD, SimulatedWorker, type ConsoleOrg } from './world.js';

const definition = `schemaVersion: v2
name: gated
trigger: {type: manual}
nodes:
  - {id: check, kind: approval, title: "Ship it?", requiredRole: admin}
edges: []
`;

/** The bytes as sent (fetch would decompress them). */
function rawGet(url: string, headers: Record<string, string>): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

for (const { set, skip } of engineSets) describe(`console API routes (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let a: ConsoleOrg;
  let b: ConsoleOrg;
  const get = (path: string, token: string) => t.call('GET', path, { token });

  before(async () => {
    t = await startTestNode({ engines: set });
    a = await consoleOrg(t, 'Acme');
    b = await consoleOrg(t, 'Globex');
  });
  after(async () => { await t?.close(); });

  it('lists sessions newest first by status and project, pages by cursor, and never shows another org\'s', async () => {
    const worker = await SimulatedWorker.register(t, a);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await t.call('POST', '/api/agent-dispatch', { token: a.apiKey, body: { projectId: a.projectId, prompt: `Task ${i}\nwith details` } });
      ids.push(r.json.sessionId);
    }
    await worker.claim(ids[0]!);
    await worker.move(ids[0]!, 'running');
    await t.call('POST', '/api/agent-dispatch', { token: b.apiKey, body: { projectId: b.projectId, prompt: 'Globex task' } });

    const all = await get('/api/sessions', a.member.token);
    expect(all.status, all.text).to.equal(200);
    expect(all.json.sessions.map((s: { id: string }) => s.id)).to.deep.equal([...ids].reverse());
    expect(all.json.sessions[4]).to.include({ title: 'Task 0', status: 'running', projectId: a.projectId });
    const running = await get('/api/sessions?status=running,claimed', a.member.token);
    expect(running.json.sessions.map((s: { id: string }) => s.id)).to.deep.equal([ids[0]]);

    const first = await get('/api/sessions?limit=2', a.member.token);
    const second = await get(`/api/sessions?limit=2&cursor=${first.json.nextCursor}`, a.member.token);
    const third = await get(`/api/sessions?limit=2&cursor=${second.json.nextCursor}`, a.member.token);
    expect([...first.json.sessions, ...second.json.sessions, ...third.json.sessions].map((s: { id: string }) => s.id)).to.deep.equal([...ids].reverse());
    expect(third.json.nextCursor).to.equal(null);

    // Another org's project names nothing; another org's sessions never appear.
    expect((await get(`/api/sessions?projectId=${b.projectId}`, a.member.token)).json.sessions).to.deep.equal([]);
    expect((await get('/api/sessions', b.owner.token)).json.sessions.map((s: { title: string }) => s.title)).to.deep.equal(['Globex task']);
    for (const bad of ['status=nope', 'limit=0', 'limit=1e9', 'cursor=!!', `cursor=${Buffer.from('x|y').toString('base64url')}`, 'projectId=42', 'extra=1']) {
      const r = await get(`/api/sessions?${bad}`, a.member.token);
      expect(r.status, `${bad}: ${r.text}`).to.equal(400);
    }
    // The tracker-issue lookup keeps its shape.
    expect((await get('/api/sessions?trackerIssue=ENG-1', a.member.token)).json).to.deep.equal({ sessions: [] });
  });

  it('gives a session\'s status timeline and whether the caller may stop or prompt it; another org gets 404', async () => {
    const worker = await SimulatedWorker.register(t, a, 'box-2');
    const r = await t.call('POST', '/api/agent-dispatch', { token: a.apiKey, body: { projectId: a.projectId, prompt: 'Timeline' } });
    const id = r.json.sessionId as string;
    await worker.claim(id);
    await worker.move(id, 'running');
    await worker.move(id, 'finalizing');
    await worker.move(id, 'completed', { costUsd: 1.5 });
    const detail = await get(`/api/public/sessions/${id}`, a.member.token);
    expect(detail.status, detail.text).to.equal(200);
    expect(detail.json.timeline.map((e: { from: string; status: string }) => `${e.from}>${e.status}`))
      .to.deep.equal(['absent>pending', 'pending>claimed', 'claimed>running', 'running>finalizing', 'finalizing>completed']);
    expect(detail.json.timeline[1].workerId).to.equal(worker.workerId);
    expect(detail.json.can).to.deep.equal({ stop: true, prompt: true });
    const viewer = await t.call('POST', `/api/admin/orgs/${a.orgId}/users`, { token: t.adminToken, body: { email: `viewer-${set}@acme.test`, role: 'viewer' } });
    expect((await get(`/api/public/sessions/${id}`, viewer.json.userToken)).json.can).to.deep.equal({ stop: false, prompt: false });
    expect((await get(`/api/public/sessions/${id}`, b.owner.token)).status).to.equal(404);
  });

  it('lists the org\'s workers with capacity, load, projects and liveness; another org sees none of them', async () => {
    const worker = await SimulatedWorker.register(t, a, 'gpu-box', 3);
    const r = await t.call('POST', '/api/agent-dispatch', { token: a.apiKey, body: { projectId: a.projectId, prompt: 'Load' } });
    await worker.claim(r.json.sessionId);
    const listed = await get('/api/fleet/workers', a.member.token);
    expect(listed.status, listed.text).to.equal(200);
    const mine = listed.json.workers.find((w: { id: string }) => w.id === worker.workerId);
    expect(mine).to.include({ hostname: 'gpu-box', maxAgents: 3, activeSessions: 1, live: true });
    expect(mine.projects).to.deep.equal([{ id: a.projectId, name: 'default' }]);
    const theirs = await get('/api/fleet/workers', b.owner.token);
    expect(theirs.json.workers.map((w: { id: string }) => w.id)).to.not.include(worker.workerId);
  });

  it('lists the gates waiting on me (role meets requiredRole), with mayDecide, the run\'s pinned version and the decision\'s comment', async () => {
    const w = await t.call('POST', `/api/projects/${a.projectId}/workflows`, { token: a.owner.token, body: { name: 'Gated', definitionYaml: definition } });
    await t.call('PATCH', `/api/workflows/${w.json.id}`, { token: a.owner.token, body: { status: 'published' } });
    const run = await t.call('POST', `/api/workflows/${w.json.id}/runs`, { token: a.owner.token, body: {} });
    expect(run.status, run.text).to.equal(201);
    const memberGate = await t.call('POST', '/api/approval-gates', { token: a.owner.token, body: { projectId: a.projectId, title: 'Members may' } });
    let ownerInbox: { gates: { id: string; title: string; mayDecide: boolean; run: { workflowId: string; version: number; workflowName: string } | null }[] } = { gates: [] };
    for (let i = 0; i < 100 && !ownerInbox.gates.some((g) => g.title === 'Ship it?'); i++) {
      ownerInbox = (await get('/api/approval-gates?for=me', a.owner.token)).json;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const runGate = ownerInbox.gates.find((g) => g.title === 'Ship it?')!;
    expect(runGate.run).to.deep.include({ workflowId: w.json.id, version: run.json.version, workflowName: 'Gated' });
    expect(runGate.mayDecide).to.equal(true);
    const memberInbox = (await get('/api/approval-gates?for=me', a.member.token)).json.gates.map((g: { title: string }) => g.title);
    expect(memberInbox).to.include('Members may').and.not.include('Ship it?');
    const memberView = (await get('/api/approval-gates', a.member.token)).json.gates.find((g: { title: string }) => g.title === 'Ship it?');
    expect(memberView.mayDecide).to.equal(false);
    // API keys decide nothing, so nothing waits on them.
    expect((await get('/api/approval-gates?for=me', a.apiKey)).json.gates).to.deep.equal([]);
    expect((await get('/api/approval-gates?for=me', b.owner.token)).json.gates.map((g: { id: string }) => g.id)).to.not.include(runGate.id);
    expect((await get('/api/approval-gates?for=you', a.owner.token)).status).to.equal(400);

    const decided = await t.call('POST', `/api/approval-gates/${memberGate.json.gate.id}/decide`, { token: a.member.token, body: { decision: 'approved', comment: '  fine by me ' } });
    expect(decided.status, decided.text).to.equal(200);
    expect(decided.json.gate.comment).to.equal('fine by me');
    const listed = (await get('/api/approval-gates?status=approved', a.owner.token)).json.gates.find((g: { id: string }) => g.id === memberGate.json.gate.id);
    expect(listed).to.include({ comment: 'fine by me', mayDecide: false });
  });

  it('reads one version snapshot in full and a workflow\'s runs newest first; another org gets 404', async () => {
    const yaml = definition.replace('requiredRole: admin', 'requiredRole: member');
    const w = await t.call('POST', `/api/projects/${a.projectId}/workflows`, { token: a.owner.token, body: { name: 'Snap', definitionYaml: yaml, nodes: [{ id: 'check' }] } });
    await t.call('PATCH', `/api/workflows/${w.json.id}`, { token: a.owner.token, body: { status: 'published', changeReason: 'go' } });
    const v1 = await get(`/api/workflows/${w.json.id}/versions/1`, a.member.token);
    expect(v1.status, v1.text).to.equal(200);
    expect(v1.json).to.include({ version: 1, definitionYaml: yaml, definitionVersion: 'v2' });
    expect(v1.json.nodes).to.deep.equal([{ id: 'check' }]);
    expect(v1.json).to.not.have.property('orgId');
    expect((await get(`/api/workflows/${w.json.id}/versions/9`, a.member.token)).status).to.equal(404);
    expect((await get(`/api/workflows/${w.json.id}/versions/1`, b.owner.token)).status).to.equal(404);

    const runIds: string[] = [];
    for (let i = 0; i < 3; i++) runIds.push((await t.call('POST', `/api/workflows/${w.json.id}/runs`, { token: a.owner.token, body: {} })).json.runId);
    const page1 = await get(`/api/workflows/${w.json.id}/runs?limit=2`, a.member.token);
    expect(page1.status, page1.text).to.equal(200);
    const page2 = await get(`/api/workflows/${w.json.id}/runs?limit=2&cursor=${page1.json.nextCursor}`, a.member.token);
    expect([...page1.json.runs, ...page2.json.runs].map((r: { runId: string }) => r.runId)).to.deep.equal([...runIds].reverse());
    expect(page1.json.runs[0].version).to.equal(2);
    expect((await get(`/api/workflows/${w.json.id}/runs`, b.owner.token)).status).to.equal(404);
    expect((await get(`/api/workflows/${w.json.id}/runs?limit=500`, a.member.token)).status).to.equal(400);

    const read = await get(`/api/workflows/${w.json.id}`, a.member.token);
    expect(read.json.can).to.deep.equal({ edit: true, publish: false, run: true });
    expect((await get(`/api/workflows/${w.json.id}`, a.owner.token)).json.can).to.deep.equal({ edit: true, publish: true, run: true });
  });

  it('answers the session probe 200 either way, and only for the cookie', async () => {
    const login = await t.call('POST', '/api/auth/login', { body: { email: a.member.email, password: PASSWORD } });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect((await t.call('GET', '/api/auth/session', { headers: { cookie } })).json).to.deep.equal({ signedIn: true });
    expect((await t.call('GET', '/api/auth/session')).json).to.deep.equal({ signedIn: false });
    expect((await t.call('GET', '/api/auth/session', { headers: { cookie: 'troupe_session=a.b.c' } })).json).to.deep.equal({ signedIn: false });
    expect((await t.call('GET', '/api/auth/session', { token: a.member.token })).json).to.deep.equal({ signedIn: false });
    await t.call('POST', '/api/auth/logout', { headers: { cookie } });
    expect((await t.call('GET', '/api/auth/session', { headers: { cookie } })).json).to.deep.equal({ signedIn: false });
  });

  it("tells a signed-in browser's page so and names its first screen's reads, per request and never stored", async () => {
    const login = await t.call('POST', '/api/auth/login', { body: { email: a.member.email, password: PASSWORD } });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    const page = async (path: string, headers: Record<string, string>) => {
      const r = await fetch(`${t.url}${path}`, { headers });
      const html = await r.text();
      const preloads = [...html.matchAll(/<link rel="preload" as="fetch" crossorigin="anonymous" href="([^"]+)">/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));
      return { r, html, preloads, signedIn: html.includes('<meta name="troupe-signed-in" content="yes">') };
    };

    const sessions = await page(`/sessions?status=live&project=${a.projectId}`, { cookie });
    expect(sessions.signedIn).to.equal(true);
    const list = `/api/sessions?status=pending%2Cclaimed%2Crunning%2Cpaused%2Cfinalizing&projectId=${a.projectId}&limit=50`;
    expect(sessions.preloads).to.deep.equal(['/api/cli/whoami', '/api/org/list', list]);
    expect(sessions.r.headers.get('cache-control')).to.equal('private, no-store');
    expect(sessions.r.headers.get('vary')).to.contain('cookie');
    expect(sessions.r.headers.get('content-security-policy')).to.contain("script-src 'self'").and.not.contain('unsafe');
    expect(sessions.html, 'nothing of the person in the page').to.not.contain(a.member.email);
    // Each named read is one the node answers for that cookie, so the page's own read of it is answered from the preload.
    for (const read of sessions.preloads) expect((await t.call('GET', read, { headers: { cookie } })).status, read).to.equal(200);
    expect((await page('/fleet', { cookie })).preloads).to.deep.equal(['/api/cli/whoami', '/api/org/list']);

    // Signed out, a stale cookie, or an API token: the built page, which asks the node itself.
    await t.call('POST', '/api/auth/logout', { headers: { cookie } });
    const others: Record<string, string>[] = [{}, { cookie }, { cookie: 'troupe_session=a.b.c' }, { authorization: `Bearer ${a.member.token}` }];
    for (const headers of others) {
      const built = await page('/sessions', headers);
      expect(built.signedIn, JSON.stringify(headers)).to.equal(false);
      expect(built.preloads).to.deep.equal([]);
      expect(built.r.headers.get('cache-control')).to.equal('no-cache');
    }
  });

  it('serves the console at / and its page paths, compressed, with a strict CSP; the API keeps its JSON 404s', async () => {
    for (const path of ['/', '/sessions/0123456789abcdef', '/approvals', '/sign-in']) {
      const r = await fetch(`${t.url}${path}`, { headers: { 'accept-encoding': 'br' } });
      expect(r.status, path).to.equal(200);
      expect(r.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      expect(r.headers.get('content-security-policy')).to.contain("script-src 'self'").and.contain("default-src 'none'").and.not.contain('unsafe');
      expect(r.headers.get('cache-control')).to.equal('no-cache');
    }
    const html = await (await fetch(`${t.url}/`)).text();
    expect(html).to.not.match(/<script(?![^>]*\bsrc=)/);
    expect(html).to.not.match(/https?:\/\//);
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/main-[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).to.have.length(2);
    let compressed = 0;
    for (const asset of assets) {
      const raw = await rawGet(`${t.url}${asset}`, { 'accept-encoding': 'gzip, deflate, br' });
      expect(raw.headers['content-encoding']).to.equal('br');
      expect(raw.headers['cache-control']).to.contain('immutable');
      compressed += raw.body.length;
      expect(brotliDecompressSync(raw.body).toString('utf8')).to.not.match(/https?:\/\/(?!www\.w3\.org)/);
    }
    expect(compressed, 'first load: compressed script and style').to.be.below(200 * 1024);
    const plain = await fetch(`${t.url}${assets[0]}`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).to.equal(null);
    expect((await fetch(`${t.url}/sw.js`)).headers.get('content-type')).to.equal('text/javascript; charset=utf-8');
    const missing = await fetch(`${t.url}/assets/nope.js`);
    expect(missing.status).to.equal(404);
    expect(((await missing.json()) as { code: string }).code).to.equal('ROUTE_NOT_FOUND');
    expect((await fetch(`${t.url}/api/nope`)).status).to.equal(404);
    const doc = await (await fetch(`${t.url}/api/openapi.json`)).json() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).to.not.include('/sessions/{id}');
    expect(Object.keys(doc.paths)).to.include.members(['/api/sessions', '/api/fleet/workers', '/api/auth/session', '/api/workflows/{id}/runs', '/api/workflows/{id}/versions/{version}']);
  });
});
