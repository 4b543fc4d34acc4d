// Invariant: a workflow template is draft-always. Only an org admin or owner (a human) edits its draft or
// publishes it; edits never touch the live version; publish freezes the draft into the next immutable version;
// the diff shows exactly what publishing would change; reads list versions newest first. Templates are private
// to their org: another org's slug, like an unknown one, is 404; API keys and worker tokens are refused 403.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provisionOrg, registerDaemon, type Org } from '../sessions/support.js';

const v1 = `schemaVersion: v2
name: triage
trigger: {type: manual}
nodes:
  - {id: plan, kind: agent, prompt: "Plan the fix"}
  - {id: gate, kind: approval, title: "Ship it?"}
edges:
  - {source: plan, target: gate}
`;
const v2 = `schemaVersion: v2
name: triage
trigger: {type: manual}
nodes:
  - {id: plan, kind: agent, prompt: "Plan the fix carefully"}
  - {id: gate, kind: approval, title: "Ship it?"}
  - {id: ship, kind: agent, prompt: "Ship it"}
edges:
  - {source: plan, target: gate}
  - {source: gate, target: ship}
`;

for (const { set, skip } of engineSets) describe(`templates routes (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let acmeAdmin: string;
  let acmeViewer: string;
  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
    const user = async (role: string) => {
      const res = await t.inject('POST', `/api/admin/orgs/${acme.orgId}/users`, { token: t.adminToken, body: { email: `${role}-${Date.now()}@acme.test`, role } });
      expect(res.status, res.text).to.equal(201);
      return res.json.userToken as string;
    };
    acmeAdmin = await user('admin');
    acmeViewer = await user('viewer');
  });
  after(() => t?.close());

  const put = (slug: string, body: Record<string, unknown>, token = acme.ownerToken) => t.inject('PUT', `/api/templates/${slug}`, { token, body });
  const get = (slug: string, token = acme.ownerToken) => t.inject('GET', `/api/templates/${slug}`, { token });
  const diff = (slug: string, token = acme.ownerToken) => t.inject('GET', `/api/templates/${slug}/diff`, { token });
  const publish = (slug: string, body: Record<string, unknown> = {}, token = acme.ownerToken) => t.inject('POST', `/api/templates/${slug}/publish`, { token, body });

  it('edits a draft, diffs it against live, publishes immutable versions listed newest first', async () => {
    const created = await put('triage', { name: 'Triage', description: 'first cut', definitionYaml: v1 });
    expect(created.status, created.text).to.equal(201);
    expect(created.json).to.deep.equal({ slug: 'triage', draftRevision: 1, liveVersion: null });

    const before = await diff('triage');
    expect(before.json).to.include({ liveVersion: null, changed: true, yamlChanged: true, edgesAdded: 1, edgesRemoved: 0 });
    expect(before.json.nodesAdded).to.deep.equal(['plan', 'gate']);
    expect((await get('triage')).json.versions).to.deep.equal([]);

    const first = await publish('triage', { changeReason: 'launch' }, acmeAdmin);
    expect(first.status, first.text).to.equal(200);
    expect(first.json).to.include({ liveVersion: 1 });
    expect((await publish('triage')).status, 'nothing new to publish').to.equal(409);
    expect((await diff('triage')).json).to.include({ changed: false, yamlChanged: false, edgesAdded: 0 });

    const edited = await put('triage', { name: 'Triage', description: 'first cut', definitionYaml: v2, expectedRevision: 1 }, acmeAdmin);
    expect(edited.status, edited.text).to.equal(200);
    expect(edited.json).to.deep.equal({ slug: 'triage', draftRevision: 2, liveVersion: 1 });
    const read = await get('triage', acmeViewer);
    expect(read.status).to.equal(200);
    expect(read.json.template).to.include({ slug: 'triage', definitionYaml: v2, draftRevision: 2, liveVersion: 1, hasUnpublishedChanges: true });
    expect(read.json.versions.map((v: { version: number }) => v.version), 'the live version is untouched by the edit').to.deep.equal([1]);
    expect(read.json.versions[0]).to.include({ definitionYaml: v1, definitionVersion: 'v2', changeReason: 'launch' });
    expect(read.json.versions[0].publishedBy).to.match(/^user:/);

    const changes = (await diff('triage')).json;
    expect(changes).to.include({ liveVersion: 1, changed: true, nameChanged: false, descriptionChanged: false, yamlChanged: true, edgesAdded: 1, edgesRemoved: 0 });
    expect(changes.nodesAdded).to.deep.equal(['ship']);
    expect(changes.nodesModified).to.deep.equal(['plan']);
    expect(changes.nodesRemoved).to.deep.equal([]);

    expect((await put('triage', { name: 'Stale', definitionYaml: v1, expectedRevision: 1 })).status, 'a stale revision').to.equal(409);
    await put('triage', { name: 'Triage v2', definitionYaml: v2 });
    expect((await publish('triage')).json.liveVersion).to.equal(2);
    const listed = (await get('triage')).json;
    expect(listed.versions.map((v: { version: number }) => v.version)).to.deep.equal([2, 1]);
    expect(listed.versions[0]).to.include({ name: 'Triage v2', definitionYaml: v2 });
    expect(listed.versions[1]).to.include({ name: 'Triage', definitionYaml: v1 });
    expect(listed.template.hasUnpublishedChanges).to.equal(false);
  });

  it('keeps versions immutable in storage too', async () => {
    await put('frozen', { name: 'Frozen', definitionYaml: v1 });
    await publish('frozen');
    const db = t.node.deps.db;
    let refused: unknown;
    try {
      await db('template_versions').where({ org_id: acme.orgId, slug: 'frozen' }).update({ definition_yaml: 'tampered' });
    } catch (err) { refused = err; }
    expect(refused, 'UPDATE refused by the trigger').to.be.instanceOf(Error);
    expect((await get('frozen')).json.versions[0].definitionYaml).to.equal(v1);
  });

  it('is private to its org: another org, an unknown or impossible slug are 404', async () => {
    await put('private', { name: 'Private', definitionYaml: v1 });
    await publish('private');
    for (const call of [get('private', globex.ownerToken), diff('private', globex.ownerToken), publish('private', {}, globex.ownerToken),
      get('nope'), diff('nope'), publish('nope'), get('Not_A_Slug')]) {
      expect((await call).status).to.equal(404);
    }
    // The same slug in another org is that org's own template, and leaves this one alone.
    expect((await put('private', { name: 'Theirs', definitionYaml: v2 }, globex.ownerToken)).status).to.equal(201);
    expect((await get('private')).json.template.name).to.equal('Private');
    expect((await get('private', globex.ownerToken)).json.versions).to.deep.equal([]);
  });

  it('takes humans only, and only admins and owners edit or publish', async () => {
    await put('guarded', { name: 'Guarded', definitionYaml: v1 });
    const worker = await registerDaemon(t, acme);
    for (const token of [acme.apiKey, worker.runtimeJwt]) {
      expect((await get('guarded', token)).status).to.equal(403);
      expect((await diff('guarded', token)).status).to.equal(403);
      expect((await put('guarded', { name: 'x', definitionYaml: v1 }, token)).status).to.equal(403);
      expect((await publish('guarded', {}, token)).status).to.equal(403);
    }
    expect((await t.inject('GET', '/api/templates/guarded')).status).to.equal(401);
    expect((await put('guarded', { name: 'x', definitionYaml: v2 }, acme.memberToken)).status).to.equal(403);
    expect((await publish('guarded', {}, acme.memberToken)).status).to.equal(403);
    expect((await put('guarded', { name: 'x', definitionYaml: v2 }, acmeViewer)).status).to.equal(403);
    expect((await get('guarded', acme.memberToken)).status, 'members read').to.equal(200);
    expect((await get('guarded')).json.template.draftRevision, 'refused edits changed nothing').to.equal(1);
  });

  it('refuses hostile bodies with 400 naming the field, changing nothing', async () => {
    await put('strict', { name: 'Strict', definitionYaml: v1 });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: 'x' }, 'definitionYaml'],
      [{ name: '', definitionYaml: v1 }, 'name'],
      [{ name: 'x', definitionYaml: v1, extra: 1 }, 'extra'],
      [{ name: 'x', definitionYaml: 'schemaVersion: v9\nname: x\n' }, 'schemaVersion'],
      [{ name: 'x', definitionYaml: 'nodes: [' }, 'definitionYaml'],
      [{ name: 'x', definitionYaml: v1.replace('prompt: "Plan the fix"', 'prompt: 7') }, 'prompt'],
    ];
    for (const [body, field] of cases) {
      const res = await put('strict', body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.text, JSON.stringify(body)).to.contain(field);
    }
    expect((await put('Bad Slug', { name: 'x', definitionYaml: v1 })).status).to.equal(400);
    expect((await publish('strict', { changeReason: 5 })).status).to.equal(400);
    expect((await get('strict')).json.template).to.include({ draftRevision: 1, definitionYaml: v1 });
  });
});
