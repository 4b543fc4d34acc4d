// Invariant: a credential is stored sealed (never in clear) by an org admin or owner only; a rotation re-resolves
// it and reaches every live rotate-stream subscriber of the caller's org and no other org's, answers how many
// listened (zero is success), refuses a foreign orgId (403) and members (403) while an API key passes on the guard,
// and leaves an audit entry after the reply. A stream resuming with Last-Event-ID (or 0) first gets its own org's
// rotations it missed, each kind's last, as pushed; a Last-Event-ID naming no rotation is 400. Plugin option snapshots upsert by (org, project, plugin, verb) behind
// the org and project-boundary guards. Hostile bodies never produce a 5xx.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, registerDaemon, type Daemon, type Org } from '../sessions/support.js';
import { openSse, type SseClient } from '../streams/sse-client.js';
import { pluginVerbs } from '../../../storage/plugins/option-snapshots.js';

for (const { set, skip } of engineSets) describe(`credentials, rotation and option snapshots (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let acmeDaemon: Daemon;
  let globexDaemon: Daemon;
  const open: SseClient[] = [];
  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
    acmeDaemon = await registerDaemon(t, acme);
    globexDaemon = await registerDaemon(t, globex);
  });
  afterEach(() => { for (const c of open.splice(0)) c.close(); });
  after(() => t?.close());

  const stream = async (d: Daemon) => {
    const c = await openSse(`${t.url}/api/daemon/credentials/stream`, { token: d.runtimeJwt });
    open.push(c);
    return c;
  };
  const put = (org: Org, token: string, kind: string, body: unknown) =>
    t.inject('PUT', `/api/org/${org.orgId}/credentials/${kind}`, { token, body });
  const rotate = (token: string, body: unknown) => t.inject('POST', '/api/daemon/credentials/rotate', { token, body });

  it('stores a credential sealed, for admins and owners only', async () => {
    const res = await put(acme, acme.ownerToken, 'github-token', { provider: 'static', value: 'ghp_secret_one' });
    expect(res.status, res.text).to.equal(200);
    expect(res.json).to.include({ orgId: acme.orgId, kind: 'github-token', provider: 'static' });
    const row = await t.node.deps.db('org_credentials').where({ org_id: acme.orgId, kind: 'github-token' }).first();
    expect(row.sealed_value).to.be.a('string').and.not.include('ghp_secret_one');
    expect((await put(acme, acme.memberToken, 'github-token', { provider: 'static', value: 'x' })).status).to.equal(403);
    expect((await put(acme, globex.ownerToken, 'github-token', { provider: 'static', value: 'x' })).status).to.equal(403);
    expect((await put(acme, acmeDaemon.runtimeJwt, 'github-token', { provider: 'static', value: 'x' })).status).to.equal(403);
    expect((await t.inject('PUT', `/api/org/${acme.orgId}/credentials/github-token`, { body: { provider: 'static', value: 'x' } })).status).to.equal(401);
  });

  it('refuses hostile credential bodies with 4xx, never 5xx', async () => {
    for (const [kind, body] of [
      ['github-token', { provider: 'vault', value: 'x' }],
      ['github-token', { provider: 'static', value: 42 }],
      ['github-token', { provider: 'static', value: '' }],
      ['github-token', { provider: 'static', value: 'x'.repeat(20_000) }],
      ['github-token', { provider: 'static' }],
      ['github-token', { provider: 'static', value: 'x', extra: 1 }],
      ['Bad%20Kind', { provider: 'static', value: 'x' }],
      ['a'.repeat(100), { provider: 'static', value: 'x' }],
    ] as const) {
      const res = await put(acme, acme.ownerToken, kind, body);
      expect(res.status, `${kind} ${JSON.stringify(body).slice(0, 60)}: ${res.text}`).to.equal(400);
    }
    const raw = await t.inject('PUT', `/api/org/${acme.orgId}/credentials/github-token`, { token: acme.ownerToken, rawBody: '{"provider":', headers: { 'content-type': 'application/json' } });
    expect(raw.status).to.equal(400);
  });

  it('fans a rotation out to every subscriber of the org and none of another org', async () => {
    const second = await registerDaemon(t, acme, 'host-2');
    const [a1, a2, g1] = [await stream(acmeDaemon), await stream(second), await stream(globexDaemon)];
    for (const c of [a1, a2, g1]) {
      expect(c.status).to.equal(200);
      await c.next((f) => f.event === 'ready');
    }
    await put(acme, acme.ownerToken, 'github-token', { provider: 'static', value: 'ghp_rotated_two' });
    const res = await rotate(acme.ownerToken, { orgId: acme.orgId, kind: 'github-token' });
    expect(res.status, res.text).to.equal(200);
    expect(res.json).to.include({ ok: true, kind: 'github-token', sessionCount: 2 });
    expect(Date.parse(res.json.rotatedAt)).to.be.a('number').and.not.NaN;
    for (const c of [a1, a2]) {
      const frame = await c.next((f) => f.event === 'credential.rotated');
      expect(frame.data).to.deep.equal({ kind: 'github-token', value: 'ghp_rotated_two', rotatedAt: res.json.rotatedAt });
    }
    // Globex's stream is still open and sees its own org's rotation, but never Acme's.
    await put(globex, globex.ownerToken, 'github-token', { provider: 'static', value: 'globex_value' });
    expect((await rotate(globex.apiKey, { orgId: globex.orgId, kind: 'github-token' })).json.sessionCount).to.equal(1);
    const own = await g1.next((f) => f.event === 'credential.rotated');
    expect(own.data.value).to.equal('globex_value');
    expect(g1.frames.filter((f) => f.event === 'credential.rotated')).to.have.length(1);
    await eventually(async () => (await t.node.deps.db('audit_log').where({ org_id: acme.orgId, type: 'credential.rotated' })).length === 1, 'deferred audit entry');
    const audit = await t.node.deps.db('audit_log').where({ org_id: acme.orgId, type: 'credential.rotated' }).first();
    expect(JSON.stringify(audit.payload)).to.not.include('ghp_rotated_two');
  });

  it('treats zero subscribers as success and counts only live ones', async () => {
    await put(acme, acme.ownerToken, 'npm-token', { provider: 'static', value: 'npm_1' });
    await eventually(async () => (await rotate(acme.ownerToken, { orgId: acme.orgId, kind: 'npm-token' })).json.sessionCount === 0, 'streams of the last test gone');
  });

  const rotated = (c: SseClient) => c.frames.filter((f) => f.event === 'credential.rotated');
  const resumeAt = async (d: Daemon, lastEventId: string) => {
    const c = await openSse(`${t.url}/api/daemon/credentials/stream`, { token: d.runtimeJwt, lastEventId });
    open.push(c);
    expect(c.status).to.equal(200);
    await c.next((f) => f.event === 'ready');
    return c;
  };

  it('replays to a stream resuming with Last-Event-ID the rotations it missed, as they were pushed, and no other org\'s', async () => {
    await put(acme, acme.ownerToken, 'resume-a', { provider: 'static', value: 'a1' });
    await put(acme, acme.ownerToken, 'resume-b', { provider: 'static', value: 'b1' });
    const first = await stream(acmeDaemon);
    await first.next((f) => f.event === 'ready');
    expect((await rotate(acme.ownerToken, { orgId: acme.orgId, kind: 'resume-a' })).status).to.equal(200);
    const heard = await first.next((f) => f.event === 'credential.rotated' && f.data.kind === 'resume-a');
    expect(heard.id).to.equal(`${heard.data.rotatedAt}.resume-a`);
    first.close();

    // While away: resume-a rotated again, resume-b rotated then stored anew without a push, and Globex rotates too.
    await put(acme, acme.ownerToken, 'resume-a', { provider: 'static', value: 'a2' });
    expect((await rotate(acme.ownerToken, { orgId: acme.orgId, kind: 'resume-a' })).status).to.equal(200);
    await put(acme, acme.ownerToken, 'resume-b', { provider: 'static', value: 'b2' });
    expect((await rotate(acme.ownerToken, { orgId: acme.orgId, kind: 'resume-b' })).status).to.equal(200);
    await put(acme, acme.ownerToken, 'resume-b', { provider: 'static', value: 'b3 stored, never pushed' });
    await put(globex, globex.ownerToken, 'resume-a', { provider: 'static', value: 'globex a' });
    expect((await rotate(globex.ownerToken, { orgId: globex.orgId, kind: 'resume-a' })).status).to.equal(200);

    const resumed = await resumeAt(acmeDaemon, heard.id!);
    expect(rotated(resumed).map((f) => [f.data.kind, f.data.value])).to.deep.equal([['resume-a', 'a2'], ['resume-b', 'b2']]);
    for (const f of rotated(resumed)) expect(f.id).to.equal(`${f.data.rotatedAt}.${f.data.kind}`);
    // Resuming from the last id it was sent replays nothing; the stream is live all the same.
    const caughtUp = await resumeAt(acmeDaemon, rotated(resumed).at(-1)!.id!);
    expect(rotated(caughtUp)).to.have.length(0);
    expect((await rotate(acme.ownerToken, { orgId: acme.orgId, kind: 'resume-a' })).status).to.equal(200);
    expect((await caughtUp.next((f) => f.event === 'credential.rotated')).data).to.include({ kind: 'resume-a', value: 'a2' });
  });

  it('sends every kind\'s last rotation to a stream starting from 0, oldest first, and only its own org\'s', async () => {
    const fromStart = await resumeAt(acmeDaemon, '0');
    const frames = rotated(fromStart);
    const kinds = frames.map((f) => f.data.kind);
    expect(kinds).to.include.members(['github-token', 'npm-token', 'resume-a', 'resume-b']);
    expect(new Set(kinds).size, 'one frame per kind').to.equal(kinds.length);
    expect(frames.map((f) => f.data.value)).to.not.include('globex a');
    const times = frames.map((f) => Date.parse(f.data.rotatedAt));
    expect(times).to.deep.equal([...times].sort((x, y) => x - y));
    const globexFromStart = await resumeAt(globexDaemon, '0');
    expect(rotated(globexFromStart).map((f) => f.data.value)).to.have.members(['globex_value', 'globex a']);
  });

  it('refuses a Last-Event-ID that names no rotation with 400, and opens nothing', async () => {
    for (const lastEventId of ['garbage', '2026-02-30T10:00:00.000Z.github-token', '2026-11-29T10:00:00.000Z.Bad Kind', '2026-11-29T10:00:00Z.github-token', '-1',
      '2026-11-29T10:00:00.000Z', '2026-11-29T10:00:00.000Z.', '2026-11-29T10:00:00.000Zxgithub-token', '+2026-11-29T10:00:00.000Z.github-token']) {
      const res = await t.inject('GET', '/api/daemon/credentials/stream', { token: acmeDaemon.runtimeJwt, headers: { 'last-event-id': lastEventId } });
      expect(res.status, lastEventId).to.equal(400);
      expect(res.json).to.include({ code: 'VALIDATION_FAILED' });
    }
  });

  it('guards rotation: foreign orgId 403, members 403, API keys pass on the guard, runtime tokens refused', async () => {
    const body = { orgId: acme.orgId, kind: 'github-token' };
    expect((await rotate(globex.ownerToken, body)).status).to.equal(403);
    expect((await rotate(globex.apiKey, body)).status).to.equal(403);
    expect((await rotate(acme.memberToken, body)).status).to.equal(403);
    expect((await rotate(acmeDaemon.runtimeJwt, body)).status).to.equal(403);
    expect((await rotate(acme.apiKey, body)).status).to.equal(200);
    const keyWith = async (scopes: string[]) =>
      (await t.inject('POST', `/api/org/${acme.orgId}/keys`, { token: acme.ownerToken, body: { name: `rotate-${scopes.join('-')}`, scopes } })).json.fullKey as string;
    const readKey = await rotate(await keyWith(['read']), body);
    expect([readKey.status, readKey.json.code], 'a read-scope key (issue 16)').to.deep.equal([403, 'AUTH_FORBIDDEN']);
    expect((await rotate(await keyWith(['read', 'write']), body)).status, 'a write-scope key').to.equal(200);
    expect((await t.inject('POST', '/api/daemon/credentials/rotate', { body })).status).to.equal(401);
    expect((await rotate(acme.ownerToken, { orgId: acme.orgId, kind: 'never-stored' })).status).to.equal(404);
    for (const hostile of [{}, { orgId: acme.orgId }, { orgId: acme.orgId, kind: '../../etc' }, { orgId: 7, kind: 'x' }, [], 'x']) {
      const res = await rotate(acme.ownerToken, hostile);
      expect(res.status, JSON.stringify(hostile)).to.be.within(400, 499);
    }
  });

  it('opens the rotate stream only with a runtime token', async () => {
    for (const token of [acme.ownerToken, acme.apiKey, 'garbage']) {
      const c = await openSse(`${t.url}/api/daemon/credentials/stream`, { token });
      expect(c.status, token.slice(0, 6)).to.be.oneOf([401, 403]);
    }
    expect((await openSse(`${t.url}/api/daemon/credentials/stream`)).status).to.equal(401);
  });

  describe('plugin option snapshots', () => {
    const snapshot = (token: string, body: unknown) => t.inject('POST', '/api/daemon/options/snapshot', { token, body });

    it('upserts by (org, project, plugin, verb) and reports skipped entries', async () => {
      const first = await snapshot(acmeDaemon.runtimeJwt, {
        orgId: acme.orgId, projectId: acme.projectId,
        snapshots: [
          { pluginId: 'github', verbId: 'open-pr', options: { repo: ['a', 'b'] } },
          { pluginId: 'linear', verbId: 'create-issue', options: { team: ['ENG'] } },
          { pluginId: 'bad id!', verbId: 'x', options: {} },
          'not an object',
        ],
      });
      expect(first.status, first.text).to.equal(200);
      expect(first.json.ok).to.equal(true);
      expect(first.json.upserted).to.equal(2);
      expect(first.json.skipped).to.have.length(2);
      const second = await snapshot(acme.apiKey, {
        orgId: acme.orgId, projectId: acme.projectId,
        snapshots: [{ pluginId: 'github', verbId: 'open-pr', options: { repo: ['c'] } }],
      });
      expect(second.json).to.deep.equal({ ok: true, upserted: 1, skipped: [] });
      const verbs = await pluginVerbs(t.node.deps.db, acme.orgId, acme.projectId);
      expect(verbs.map((v) => [v.pluginId, v.verbId, v.options])).to.deep.equal([
        ['github', 'open-pr', { repo: ['c'] }], ['linear', 'create-issue', { team: ['ENG'] }],
      ]);
      expect(await pluginVerbs(t.node.deps.db, globex.orgId, acme.projectId)).to.deep.equal([]);
    });

    it('refuses a foreign org, a project outside the org or the token, and hostile bodies', async () => {
      const entry = [{ pluginId: 'p', verbId: 'v', options: {} }];
      expect((await snapshot(globex.apiKey, { orgId: acme.orgId, projectId: acme.projectId, snapshots: entry })).status).to.equal(403);
      expect((await snapshot(acme.apiKey, { orgId: acme.orgId, projectId: globex.projectId, snapshots: entry })).status).to.equal(403);
      expect((await snapshot(acmeDaemon.runtimeJwt, { orgId: acme.orgId, projectId: globex.projectId, snapshots: entry })).status).to.equal(403);
      expect((await snapshot(acme.ownerToken, { orgId: acme.orgId, projectId: 'not-a-uuid', snapshots: entry })).status).to.equal(403);
      expect((await t.inject('POST', '/api/daemon/options/snapshot', { body: { orgId: acme.orgId, projectId: acme.projectId, snapshots: entry } })).status).to.equal(401);
      for (const hostile of [{}, { orgId: acme.orgId, projectId: acme.projectId }, { orgId: acme.orgId, projectId: acme.projectId, snapshots: 'x' },
        { orgId: acme.orgId, projectId: acme.projectId, snapshots: Array.from({ length: 501 }, () => entry[0]) }]) {
        expect((await snapshot(acme.apiKey, hostile)).status, JSON.stringify(hostile).slice(0, 80)).to.equal(400);
      }
      const huge = await snapshot(acme.apiKey, { orgId: acme.orgId, projectId: acme.projectId, snapshots: [{ pluginId: 'p', verbId: 'v', options: { s: 'x'.repeat(70_000) } }] });
      expect(huge.json).to.deep.include({ upserted: 0 });
      expect(huge.json.skipped[0]).to.match(/larger than/);
    });
  });
});
