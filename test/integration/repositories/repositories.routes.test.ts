// Invariant: a project's repositories are registered, listed and removed over HTTP (issue 34 §2): https, ssh and
// scp-like URLs with a name from the URL and `main` by default; every URL form git could be tricked by (credentials,
// control characters, transport helpers, options) is 400 on `url` and registers nothing; file:// only on a node started
// with TROUPE_ALLOW_FILE_REPOSITORIES; names and URLs are unique per project and a project holds at most 200; readers
// list, editors and admins change, each change audited; another org sees none of them; the palette shows them as `repo`.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provisionOrg, type Org } from '../sessions/support.js';
import { auditOutboxDepth } from '../../../storage/audit-outbox.js';
import { MAX_REPOSITORIES_PER_PROJECT } from '../../../storage/repositories/repositories.js';
import { projectPeople, register, registered, repositoriesPath, repositoryNames, type ProjectPeople } from './support.js';

const hostileUrls: Record<string, string> = {
  'plain http': 'http://git.example.test/acme/app.git',
  'user and password': 'https://alice:s3cret@git.example.test/acme/app.git',
  'a token as user': 'https://ghp_abcdef@github.com/acme/app.git',
  'ssh password': 'ssh://git:s3cret@git.example.test/acme/app.git',
  'a space': 'https://git.example.test/acme/my app.git',
  'a newline': 'https://git.example.test/acme/app.git\n--upload-pack=touch',
  'a tab': 'git@github.com:acme/app.git\t',
  'a NUL': 'https://git.example.test/acme/app\u0000.git',
  'a right-to-left override': 'https://git.example.test/acme/app\u202e.git',
  'a leading dash': '-uhttps://git.example.test/acme/app.git',
  'a leading --upload-pack': '--upload-pack=touch%20/tmp/pwned',
  '--upload-pack in the query': 'https://git.example.test/acme/app.git?--upload-pack=touch',
  '--upload-pack in the path': 'git@github.com:acme/app.git--upload-pack=touch',
  '-u as a path segment': 'git@github.com:-u/app.git',
  'a host that is an ssh option': 'ssh://-oProxyCommand=touch/app.git',
  'ext:: transport helper': 'ext::sh%20-c%20touch%20/tmp/pwned',
  'fd:: transport helper': 'fd::17',
  'helper inside': 'https://git.example.test/x::y',
  'ftp scheme': 'ftp://git.example.test/acme/app.git',
  'scp-like without a user': 'github.com:acme/app.git',
  'no host': 'https:///acme/app.git',
  'file:// without the flag': 'file:///srv/git/app.git',
};

for (const { set, skip } of engineSets) describe(`project repositories (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let fileNode: TestNode;
  let acme: Org;
  let globex: Org;
  let people: ProjectPeople;
  before(async () => {
    [t, fileNode] = await Promise.all([startTestNode({ engines: set }), startTestNode({ engines: set, config: { allowFileRepositories: true } })]);
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
    people = await projectPeople(t, acme);
  });
  after(async () => { await Promise.all([t?.close(), fileNode?.close()]); });

  it('registers https, ssh and user@host:path repositories (name from the URL, branch main by default), lists them oldest first, removes one', async () => {
    const widgets = await registered(t, acme, { url: 'https://github.com/acme/widgets.git' });
    expect(widgets).to.include({ url: 'https://github.com/acme/widgets.git', name: 'widgets', defaultBranch: 'main' });
    expect(widgets.id).to.match(/^[0-9a-f-]{36}$/);
    expect(await registered(t, acme, { url: 'ssh://git@git.acme.test/tools/cli.git', defaultBranch: 'develop' })).to.include({ name: 'cli', defaultBranch: 'develop' });
    expect(await registered(t, acme, { url: 'git@github.com:acme/api', name: 'backend', defaultBranch: 'release/2.x' })).to.include({ name: 'backend', defaultBranch: 'release/2.x' });
    expect(await repositoryNames(t, acme)).to.deep.equal(['widgets', 'cli', 'backend']);

    const removed = await t.call('DELETE', `${repositoriesPath(acme)}/${widgets.id}`, { token: acme.ownerToken });
    expect([removed.status, removed.json]).to.deep.equal([200, { id: widgets.id, deleted: true }]);
    expect(await repositoryNames(t, acme)).to.deep.equal(['cli', 'backend']);
    const again = await t.call('DELETE', `${repositoriesPath(acme)}/${widgets.id}`, { token: acme.ownerToken });
    expect([again.status, again.json.code]).to.deep.equal([404, 'NOT_FOUND']);
  });

  it('refuses every URL form git or ssh could be tricked by with 400 on url, and registers nothing', async () => {
    const before = await repositoryNames(t, acme);
    for (const [what, url] of Object.entries(hostileUrls)) {
      const res = await register(t, acme, { url, name: 'hostile' });
      expect(res.status, `${what}: ${res.text}`).to.equal(400);
      expect(res.json, what).to.include({ code: 'VALIDATION_FAILED' });
      expect(res.json.details?.field, what).to.equal('url');
    }
    expect(await repositoryNames(t, acme)).to.deep.equal(before);
  });

  it('takes file:// only on a node started with TROUPE_ALLOW_FILE_REPOSITORIES, and a file URL needs a path', async () => {
    const refused = await register(t, acme, { url: 'file:///srv/git/app.git' });
    expect([refused.status, refused.json.details?.field]).to.deep.equal([400, 'url']);
    expect(refused.json.error).to.contain('TROUPE_ALLOW_FILE_REPOSITORIES');
    const local = await provisionOrg(fileNode, 'Local');
    const res = await register(fileNode, local, { url: 'file:///srv/git/app.git' });
    expect(res.status, res.text).to.equal(201);
    expect(res.json).to.include({ name: 'app', url: 'file:///srv/git/app.git' });
    for (const url of ['file:///', 'file://fileserver/srv/git/app.git', 'file:///srv/git/app\u0007.git']) {
      expect((await register(fileNode, local, { url })).status, url).to.equal(400);
    }
  });

  it('keeps names and URLs unique per project (409 on the field), checks names, and holds at most 200 per project', async () => {
    const org = await provisionOrg(t, 'Many');
    await registered(t, org, { url: 'https://git.example.test/many/one.git' });
    const sameName = await register(t, org, { url: 'https://git.example.test/other/one.git' });
    expect([sameName.status, sameName.json.code, sameName.json.details?.field]).to.deep.equal([409, 'ALREADY_EXISTS', 'name']);
    const sameUrl = await register(t, org, { url: 'https://git.example.test/many/one.git', name: 'again' });
    expect([sameUrl.status, sameUrl.json.details?.field]).to.deep.equal([409, 'url']);
    // Another project may use the same name: Globex's is not Many's.
    expect((await register(t, globex, { url: 'https://git.example.test/many/one.git' })).status).to.equal(201);
    for (const body of [{ url: 'https://git.example.test/x.git', name: '-x' }, { url: 'https://git.example.test/x.git', name: 'a b' }, { url: 'https://git.example.test/' }]) {
      const res = await register(t, org, body);
      expect([res.status, res.json.details?.field], JSON.stringify(body)).to.deep.equal([400, 'name']);
    }
    for (const defaultBranch of ['-main', 'a..b', 'feature/', 'x.lock', 'has space']) {
      expect((await register(t, org, { url: 'https://git.example.test/y.git', defaultBranch })).status, defaultBranch).to.equal(400);
    }
    for (let i = 1; i < MAX_REPOSITORIES_PER_PROJECT; i++) await registered(t, org, { url: `https://git.example.test/many/r${i}.git` });
    const full = await register(t, org, { url: 'https://git.example.test/many/one-too-many.git' });
    expect([full.status, full.json.code]).to.deep.equal([409, 'CONFLICT']);
    expect(await repositoryNames(t, org)).to.have.length(MAX_REPOSITORIES_PER_PROJECT);
  });

  it('project readers list; editors, members and admins register and remove; viewers and read keys cannot; each change is audited', async () => {
    const readKey = (await t.call('POST', `/api/org/${acme.orgId}/keys`, { token: acme.ownerToken, body: { name: 'reader', scopes: ['read'] } })).json.fullKey as string;
    const before = await repositoryNames(t, acme);
    for (const [who, token] of [['org viewer', people.orgViewer], ['project viewer', people.projectViewer], ['read key', readKey]] as const) {
      expect(await repositoryNames(t, acme, token), `${who} lists`).to.deep.equal(before);
      const res = await register(t, acme, { url: `https://git.example.test/${who.replace(/ /g, '-')}.git` }, token);
      expect([res.status, res.json.code], who).to.deep.equal([403, 'AUTHZ_DENIED']);
    }
    const byEditor = await register(t, acme, { url: 'https://git.example.test/acme/by-editor.git' }, people.projectEditor);
    expect(byEditor.status, byEditor.text).to.equal(201);
    const byMember = await register(t, acme, { url: 'https://git.example.test/acme/by-member.git' }, acme.memberToken);
    expect(byMember.status, byMember.text).to.equal(201);
    const refusedDelete = await t.call('DELETE', `${repositoriesPath(acme)}/${byEditor.json.id}`, { token: people.projectViewer });
    expect(refusedDelete.status).to.equal(403);
    expect((await t.call('DELETE', `${repositoriesPath(acme)}/${byMember.json.id}`, { token: people.projectEditor })).status).to.equal(200);
    expect(await repositoryNames(t, acme)).to.deep.equal([...before, 'by-editor']);

    for (let i = 0; i < 100 && (await auditOutboxDepth(t.node.deps.db)) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    const audit = await t.call('GET', '/api/audit?limit=100', { token: acme.ownerToken });
    const entries = (audit.json.entries as { type: string; subject: string; payload: { name?: string } }[])
      .filter((e) => e.type.startsWith('repository.')).map((e) => `${e.type} ${e.payload.name}`);
    // Every change of Acme's repositories in this suite, and nothing for the refused attempts.
    expect(entries.sort()).to.deep.equal([
      'repository.created backend', 'repository.created by-editor', 'repository.created by-member', 'repository.created cli',
      'repository.created widgets', 'repository.deleted by-member', 'repository.deleted widgets',
    ]);
  });

  it("never shows or changes another org's repositories: its project and its repository ids are 404", async () => {
    const theirs = await registered(t, globex, { url: 'https://git.example.test/globex/secret-sauce.git' });
    const list = await t.call('GET', repositoriesPath(globex), { token: acme.ownerToken });
    expect([list.status, list.json.code]).to.deep.equal([404, 'NOT_FOUND']);
    expect((await register(t, globex, { url: 'https://git.example.test/acme/planted.git' }, acme.ownerToken)).status).to.equal(404);
    expect((await t.call('DELETE', `${repositoriesPath(globex)}/${theirs.id}`, { token: acme.ownerToken })).status).to.equal(404);
    // Globex's repository id under Acme's own project is not Acme's either.
    expect((await t.call('DELETE', `${repositoriesPath(acme)}/${theirs.id}`, { token: acme.ownerToken })).status).to.equal(404);
    expect(JSON.stringify((await t.call('GET', repositoriesPath(acme), { token: acme.ownerToken })).json)).to.not.contain('secret-sauce');
    expect(await repositoryNames(t, globex, globex.ownerToken)).to.include('secret-sauce');
    for (const id of ['not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
      expect((await t.call('DELETE', `${repositoriesPath(acme)}/${id}`, { token: acme.ownerToken })).status, id).to.equal(404);
    }
  });

  it('shows the project\'s repositories in its resource palette under repo, and only its own', async () => {
    const palette = await t.call('GET', `/api/projects/${acme.projectId}/palette?kind=repo`, { token: people.projectViewer });
    expect(palette.status, palette.text).to.equal(200);
    const repos = (palette.json.groups.repo as { name: string; provider: string; url: string; defaultBranch: string }[]).filter((e) => e.provider === 'git');
    expect(repos.map((r) => r.name)).to.deep.equal(await repositoryNames(t, acme));
    expect(repos.find((r) => r.name === 'cli')).to.include({ url: 'ssh://git@git.acme.test/tools/cli.git', defaultBranch: 'develop' });
    const theirs = await t.call('GET', `/api/projects/${globex.projectId}/palette?kind=repo`, { token: globex.ownerToken });
    expect(JSON.stringify(theirs.json)).to.not.contain('widgets').and.not.contain('by-editor');
  });
});
