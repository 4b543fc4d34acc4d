// Invariant: an external agent is registered by URL with its card fetched from the A2A well-known path (current
// path first, the legacy one as fallback) of a loopback agent allowed through TROUPE_OUTBOUND_ALLOW; every answer
// carries exactly the spec 2.7 record; internal targets not on the allow list are refused before any connection;
// only a human admin or owner sets trust; another org's agent is 404; hostile bodies never get a 5xx.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { addUser, hostileBodies, provision, type Org } from './fixtures.js';

const RECORD_KEYS = ['id', 'orgId', 'url', 'trustLevel', 'card', 'lastFetchedAt', 'createdAt', 'updatedAt', 'reachable'].sort();
const CARD_KEYS = ['name', 'url', 'version', 'description', 'skills'].sort();

for (const { set, skip } of engineSets) describe(`external agents (A2A) over HTTP (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: Org;
  let other: Org;
  let agentServer: http.Server;
  let base: string;
  const hits: string[] = [];
  let cardVersion = '1.0.0';
  let legacyOnly = false;

  before(async () => {
    agentServer = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      const card = {
        name: 'Release helper', description: 'Cuts releases', version: cardVersion, protocolVersion: '0.3.0',
        url: `http://127.0.0.1:${(agentServer.address() as AddressInfo).port}/a2a`,
        capabilities: { streaming: true }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
        skills: [{ id: 'cut', name: 'Cut a release', description: 'Tags and ships', tags: ['release'] }],
      };
      if (req.url === '/.well-known/agent-card.json' && !legacyOnly) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
      if (req.url === '/.well-known/agent.json') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...card, name: 'Legacy helper' }));
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => agentServer.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(agentServer.address() as AddressInfo).port}`;
    t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1/32'] } });
    org = await provision(t);
    other = await provision(t);
  });
  after(async () => {
    await t?.close();
    agentServer.closeAllConnections();
    await new Promise((resolve) => agentServer.close(resolve));
  });

  let agentId: string;

  it('registers an agent from its well-known card with the exact spec 2.7 record', async () => {
    const r = await t.inject('POST', '/api/a2a/agents', { token: org.ownerToken, body: { url: `${base}/` } });
    expect(r.status, r.text).to.equal(201);
    const a = r.json.agent;
    expect(Object.keys(a).sort()).to.deep.equal(RECORD_KEYS);
    expect(Object.keys(a.card).sort()).to.deep.equal(CARD_KEYS);
    expect(a).to.deep.include({ orgId: org.orgId, url: `${base}/`, trustLevel: 'untrusted', reachable: true });
    expect(a.card).to.deep.equal({
      name: 'Release helper', url: `${base}/a2a`, version: '1.0.0', description: 'Cuts releases',
      skills: [{ id: 'cut', name: 'Cut a release', description: 'Tags and ships', tags: ['release'] }],
    });
    expect(Date.parse(a.lastFetchedAt)).to.be.greaterThan(0);
    expect(hits).to.include('/.well-known/agent-card.json');
    agentId = a.id;
    const again = await t.inject('POST', '/api/a2a/agents', { token: org.ownerToken, body: { url: `${base}/` } });
    expect(again.status).to.equal(409);
  });

  it('falls back to the legacy well-known path, and records an unreachable agent as such', async () => {
    legacyOnly = true;
    try {
      const r = await t.inject('POST', '/api/a2a/agents', { token: org.ownerToken, body: { url: `${base}/legacy` } });
      expect(r.status, r.text).to.equal(201);
      expect(r.json.agent.card.name).to.equal('Legacy helper');
    } finally {
      legacyOnly = false;
    }
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const down = await t.inject('POST', '/api/a2a/agents', { token: org.ownerToken, body: { url: `http://127.0.0.1:${deadPort}/` } });
    expect(down.status, down.text).to.equal(201);
    expect(down.json.agent.reachable).to.equal(false);
    expect(down.json.agent.card).to.deep.equal({ name: `127.0.0.1:${deadPort}`, url: `http://127.0.0.1:${deadPort}/`, version: '', description: '', skills: [] });
  });

  it('refuses internal targets that are not allowed, before connecting', async () => {
    for (const url of ['http://[::1]:1/', 'http://169.254.169.254/latest/meta-data', 'http://10.0.0.1/', 'http://[::ffff:10.0.0.1]/', 'file:///etc/passwd', `http://u:p@127.0.0.1:1/`]) {
      const r = await t.inject('POST', '/api/a2a/agents', { token: org.ownerToken, body: { url } });
      expect(r.status, `${url} ${r.text}`).to.equal(400);
    }
  });

  it('lists and reads only the caller\'s agents; another org gets 404', async () => {
    const list = await t.inject('GET', '/api/a2a/agents', { token: org.apiKey });
    expect(list.status).to.equal(200);
    expect(list.json.agents.map((a: { id: string }) => a.id)).to.include(agentId);
    for (const a of list.json.agents) expect(Object.keys(a).sort()).to.deep.equal(RECORD_KEYS);
    expect((await t.inject('GET', '/api/a2a/agents', { token: other.ownerToken })).json.agents).to.deep.equal([]);
    expect((await t.inject('GET', `/api/a2a/agents/${agentId}`, { token: other.ownerToken })).status).to.equal(404);
    expect((await t.inject('PATCH', `/api/a2a/agents/${agentId}`, { token: other.ownerToken, body: { trustLevel: 'internal' } })).status).to.equal(404);
    expect((await t.inject('GET', '/api/a2a/agents')).status).to.equal(401);
  });

  it('sets trust with a user token (admin or owner) or the session cookie, and refuses everyone else', async () => {
    const r = await t.inject('PATCH', `/api/a2a/agents/${agentId}`, { token: org.ownerToken, body: { trustLevel: 'internal' } });
    expect(r.status, r.text).to.equal(200);
    expect(Object.keys(r.json.agent).sort()).to.deep.equal(RECORD_KEYS);
    expect(r.json.agent.trustLevel).to.equal('internal');

    const admin = await addUser(t, org.orgId, 'admin');
    const member = await addUser(t, org.orgId, 'member');
    expect((await t.inject('PATCH', `/api/a2a/agents/${agentId}`, { token: admin.token, body: { trustLevel: 'verified' } })).json.agent.trustLevel).to.equal('verified');
    expect((await t.inject('PATCH', `/api/a2a/agents/${agentId}`, { token: member.token, body: { trustLevel: 'internal' } })).status).to.equal(403);
    expect((await t.inject('PATCH', `/api/a2a/agents/${agentId}`, { token: org.apiKey, body: { trustLevel: 'internal' } })).status).to.equal(403);
    expect((await t.inject('PATCH', `/api/a2a/agents/${agentId}`, { body: { trustLevel: 'internal' } })).status).to.equal(401);
    expect((await t.inject('PATCH', `/api/a2a/agents/${agentId}`, { token: org.ownerToken, body: { trustLevel: 'root' } })).status).to.equal(400);
    expect((await t.inject('POST', '/api/a2a/agents', { token: member.token, body: { url: `${base}/m` } })).status).to.equal(403);

    const cookie = `troupe_session=${admin.token}`;
    const viaCookie = await t.inject('PATCH', `/api/a2a/agents/${agentId}`, { headers: { cookie, 'sec-fetch-site': 'same-origin' }, body: { trustLevel: 'untrusted' } });
    expect(viaCookie.status, viaCookie.text).to.equal(200);
    expect(viaCookie.json.agent.trustLevel).to.equal('untrusted');
  });

  it('re-fetches a card on demand and keeps lastFetchedAt current', async () => {
    const before = (await t.inject('GET', `/api/a2a/agents/${agentId}`, { token: org.ownerToken })).json.agent;
    cardVersion = '2.0.0';
    const r = await t.inject('POST', `/api/a2a/agents/${agentId}/refresh`, { token: org.ownerToken });
    expect(r.status, r.text).to.equal(200);
    expect(r.json.agent.card.version).to.equal('2.0.0');
    expect(Date.parse(r.json.agent.lastFetchedAt)).to.be.greaterThan(Date.parse(before.lastFetchedAt));
    await eventually(async () => (await t.inject('GET', `/api/a2a/agents/${agentId}`, { token: org.ownerToken })).json.agent.card.version === '2.0.0', 'read model follows');
  });

  it('never answers a hostile body with a 5xx', async () => {
    for (const rawBody of hostileBodies) {
      for (const [method, path] of [['POST', '/api/a2a/agents'], ['PATCH', `/api/a2a/agents/${agentId}`]] as const) {
        const r = await t.inject(method, path, { token: org.ownerToken, rawBody, headers: { 'content-type': 'application/json' } });
        expect(r.status, `${method} ${path} ${r.text}`).to.be.within(400, 499);
      }
    }
    expect((await t.inject('GET', '/api/a2a/agents/not-a-uuid', { token: org.ownerToken })).status).to.equal(404);
  });
});
