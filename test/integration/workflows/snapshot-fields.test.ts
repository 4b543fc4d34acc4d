// Invariant (spec 2.1, 6.1): a version snapshot gives back exactly what the change that made it sent — viewport,
// triggerConfig, providerRequirements, workflowConfig — with who made it (`changedBy`) and why (`changeReason`);
// its schemaHash is the lowercase hex SHA-256 of the definition YAML's UTF-8 bytes exactly as saved; the version
// list gives each version's changedBy, changeReason and createdAt (UTC, when the change was answered); an older
// snapshot keeps its fields when later versions change them; and each version's `workflow.version_created` audit
// entry names the user who made it and the reason given.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { addUser, provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';

// Non-ASCII text, a comment and trailing blanks: a hash of anything but the exact UTF-8 bytes would differ.
const yamlV1 = `# Triage, as the canvas saved it  \nschemaVersion: v2\nname: triage\ntrigger: {type: manual}\nnodes:\n  - {id: plan, kind: agent, prompt: "Planifier la réparation — vite ✓"}\nedges: []\n\n`;
const yamlV2 = yamlV1.replace('vite ✓', 'sans hâte');

const sha256Hex = (text: string): string => createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

const first = {
  viewport: { x: -120.5, y: 48, zoom: 0.75 },
  triggerConfig: { type: 'manual', label: 'by hand', inputs: [{ name: 'ticket', required: true }] },
  providerRequirements: ['github', 'linear'],
  workflowConfig: { timeoutMinutes: 30, labels: { team: 'infra' }, retry: null },
};
const second = {
  viewport: { x: 0, y: 0, zoom: 2 },
  triggerConfig: { type: 'manual', label: 'renamed' },
  providerRequirements: ['circleci'],
  workflowConfig: { timeoutMinutes: 5 },
};

for (const { set, skip } of engineSets) describe(`workflows: version snapshot fields, hash and audit (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;
  let editor: { userId: string; token: string };

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
    editor = await addUser(t, org.orgId, 'member');
  });
  after(async () => { await t?.close(); });

  const api = (method: string, path: string, token: string, body?: unknown) => t.call(method, path, { token, ...(body === undefined ? {} : { body }) });

  /** A workflow at version 1 (by the owner) and version 2 (by a member, with a reason), with when each answered. */
  async function twoVersions(): Promise<{ id: string; between: [number, number, number] }> {
    const before = Date.now();
    const created = await api('POST', `/api/projects/${org.projectId}/workflows`, org.ownerToken, { name: 'triage', definitionYaml: yamlV1, ...first });
    expect(created.status, created.text).to.equal(201);
    const middle = Date.now();
    const edited = await api('PATCH', `/api/workflows/${created.json.id}`, editor.token, { definitionYaml: yamlV2, changeReason: 'calmer prompt — per review', ...second });
    expect(edited.status, edited.text).to.equal(200);
    return { id: created.json.id as string, between: [before, middle, Date.now()] };
  }

  it('gives back every snapshot field as sent, each version its own, with who and why', async () => {
    const { id } = await twoVersions();
    const v1 = await api('GET', `/api/workflows/${id}/versions/1`, org.ownerToken);
    expect(v1.status, v1.text).to.equal(200);
    expect(v1.json).to.deep.include({ ...first, version: 1, definitionYaml: yamlV1, definitionVersion: 'v2', changedBy: `user:${org.ownerId}`, changeReason: null });
    const v2 = await api('GET', `/api/workflows/${id}/versions/2`, org.ownerToken);
    expect(v2.json).to.deep.include({
      ...second, version: 2, definitionYaml: yamlV2, changedBy: `user:${editor.userId}`, changeReason: 'calmer prompt — per review',
    });
    // The current workflow carries the newest snapshot's fields.
    expect((await api('GET', `/api/workflows/${id}`, org.ownerToken)).json).to.deep.include(second);
  });

  it('records an API key as the identity that made a snapshot', async () => {
    const created = await api('POST', `/api/projects/${org.projectId}/workflows`, org.apiKey, { name: 'by-key' });
    expect(created.status, created.text).to.equal(201);
    const [summary] = (await api('GET', `/api/workflows/${created.json.id}/versions`, org.ownerToken)).json;
    expect(summary.changedBy).to.match(/^apiKey:.+/);
    expect(summary.changedBy).to.not.contain(org.apiKey.slice(4));
  });

  it('hashes the YAML text exactly as saved: SHA-256 of its UTF-8 bytes, lowercase hex', async () => {
    const { id } = await twoVersions();
    const v1 = (await api('GET', `/api/workflows/${id}/versions/1`, org.ownerToken)).json;
    const v2 = (await api('GET', `/api/workflows/${id}/versions/2`, org.ownerToken)).json;
    expect(v1.schemaHash).to.equal(sha256Hex(yamlV1));
    expect(v2.schemaHash).to.equal(sha256Hex(yamlV2));
    const summaries = (await api('GET', `/api/workflows/${id}/versions`, org.ownerToken)).json;
    expect(summaries.map((s: { schemaHash: string }) => s.schemaHash)).to.deep.equal([sha256Hex(yamlV2), sha256Hex(yamlV1)]);
    // A change that leaves the YAML alone keeps its hash.
    await api('PATCH', `/api/workflows/${id}`, org.ownerToken, { viewport: { x: 1, y: 1, zoom: 1 } });
    expect((await api('GET', `/api/workflows/${id}/versions/3`, org.ownerToken)).json.schemaHash).to.equal(sha256Hex(yamlV2));
  });

  it('lists version summaries newest first with changedBy, changeReason and a UTC createdAt of when each was made', async () => {
    const { id, between: [before, middle, after] } = await twoVersions();
    const list = await api('GET', `/api/workflows/${id}/versions`, org.ownerToken);
    expect(list.status, list.text).to.equal(200);
    const [newest, oldest] = list.json as Array<{ version: number; changedBy: string; changeReason: string | null; createdAt: string }>;
    expect(newest).to.include({ version: 2, changedBy: `user:${editor.userId}`, changeReason: 'calmer prompt — per review' });
    expect(oldest).to.include({ version: 1, changedBy: `user:${org.ownerId}`, changeReason: null });
    for (const s of [newest!, oldest!]) expect(s.createdAt).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(Date.parse(oldest!.createdAt)).to.be.within(before, middle);
    expect(Date.parse(newest!.createdAt)).to.be.within(middle, after);
    expect(newest!.createdAt).to.equal((await api('GET', `/api/workflows/${id}/versions/2`, org.ownerToken)).json.createdAt);
  });

  it('audits each version as workflow.version_created with the user who made it and the reason', async () => {
    const { id } = await twoVersions();
    let entries: Array<{ type: string; actor: string; subject: string; payload: Record<string, unknown> }> = [];
    await eventually(async () => {
      const audit = await api('GET', '/api/audit?limit=50', org.ownerToken);
      entries = (audit.json.entries as typeof entries).filter((e) => e.type === 'workflow.version_created' && e.subject === id);
      return entries.length === 2;
    }, 'both versions audited');
    const byVersion = new Map(entries.map((e) => [e.payload.version, e]));
    expect(byVersion.get(2)).to.deep.include({ actor: editor.userId });
    expect(byVersion.get(2)!.payload).to.include({
      workflowId: id, version: 2, changedBy: `user:${editor.userId}`, changeReason: 'calmer prompt — per review',
    });
    expect(byVersion.get(1)).to.deep.include({ actor: org.ownerId });
    expect(byVersion.get(1)!.payload).to.include({ workflowId: id, version: 1, changedBy: `user:${org.ownerId}`, changeReason: null });
    const elsewhere = await api('GET', '/api/audit?limit=50', other.ownerToken);
    expect(elsewhere.json.entries.filter((e: { subject: string }) => e.subject === id), "another org's audit").to.deep.equal([]);
    expect((await api('GET', `/api/workflows/${id}/versions/1`, other.ownerToken)).status, "another org's snapshot").to.equal(404);
  });
});
