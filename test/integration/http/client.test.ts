// Invariant: the typed client (http/client) talks to a real node: replies arrive as the document types them; a
// refusal becomes a TroupeApiError carrying the status and the `{error, code}` the node answered; an unreachable
// node becomes a TroupeUnreachableError; the credential is asked for before every request, so a swapped token is
// used at once; and another org's resource stays invisible through it as through any other caller.
import { expect } from 'chai';
import { createTroupeClient, TroupeApiError, TroupeUnreachableError, unwrap } from '../../../http/client/index.js';
import { startTestNode, type TestNode } from '../../support/node.js';

describe('the typed client against a node', function () {
  this.timeout(120_000);
  let t: TestNode;
  before(async () => { t = await startTestNode(); });
  after(async () => { await t?.close(); });

  const createOrg = (name: string) => {
    const admin = createTroupeClient({ baseUrl: t.url, token: t.adminToken });
    return unwrap(admin.POST('/api/admin/orgs', { body: { name, owner: { email: `owner@${name.toLowerCase()}.test` } } }));
  };

  it('returns typed data for a success', async () => {
    const org = await createOrg('Typed');
    expect(org.apiKey.fullKey).to.match(/^trp_/);
    const api = createTroupeClient({ baseUrl: `${t.url}/`, token: org.apiKey.fullKey });
    const listed = await unwrap(api.GET('/api/fleet/sessions', { params: { query: { status: 'pending' } } }));
    expect(listed.sessions).to.deep.equal([]);
  });

  it("turns a refusal into a TroupeApiError with the node's code, and keeps other orgs' resources invisible", async () => {
    const acme = await createOrg('Acme');
    const globex = await createOrg('Globex');
    const wrong = createTroupeClient({ baseUrl: t.url, token: 'trp_not_a_real_key' });
    const unauthorised = await unwrap(wrong.GET('/api/fleet/sessions')).catch((e: unknown) => e);
    expect(unauthorised).to.be.instanceOf(TroupeApiError);
    expect(unauthorised).to.include({ status: 401, method: 'GET', path: '/api/fleet/sessions' });
    expect((unauthorised as TroupeApiError).code).to.match(/^AUTH_/);

    // Globex's key asks for Acme's workflow: the answer is the one for a workflow that does not exist.
    const acmeApi = createTroupeClient({ baseUrl: t.url, token: acme.apiKey.fullKey });
    const workflow = await unwrap(acmeApi.POST('/api/projects/{projectId}/workflows', {
      params: { path: { projectId: acme.project.id } }, body: { name: 'triage' },
    }));
    const globexApi = createTroupeClient({ baseUrl: t.url, token: globex.apiKey.fullKey });
    const hidden = await unwrap(globexApi.GET('/api/workflows/{id}', { params: { path: { id: workflow.id } } })).catch((e: unknown) => e);
    expect(hidden).to.be.instanceOf(TroupeApiError);
    expect(hidden).to.include({ status: 404, code: 'NOT_FOUND' });
    expect((hidden as TroupeApiError).message).to.equal(`GET /api/workflows/${workflow.id} failed: 404 NOT_FOUND: ${(hidden as TroupeApiError).reason}`);
    expect((await unwrap(acmeApi.GET('/api/workflows/{id}', { params: { path: { id: workflow.id } } }))).name).to.equal('triage');

    const invalid = await unwrap(globexApi.POST('/api/projects/{projectId}/workflows', {
      params: { path: { projectId: globex.project.id } },
      body: { name: '' },
    })).catch((e: unknown) => e);
    expect(invalid).to.be.instanceOf(TroupeApiError);
    expect(invalid).to.include({ status: 400, code: 'VALIDATION_FAILED' });
    expect((invalid as TroupeApiError).details).to.have.property('field', 'name');
  });

  it('asks for the credential before every request', async () => {
    const org = await createOrg('Rotating');
    let token = 'trp_not_a_real_key';
    const api = createTroupeClient({ baseUrl: t.url, token: () => token });
    expect((await api.GET('/api/fleet/sessions')).response.status).to.equal(401);
    token = org.apiKey.fullKey;
    expect((await api.GET('/api/fleet/sessions')).response.status).to.equal(200);
  });

  it('reports an unreachable node as such', async () => {
    const api = createTroupeClient({ baseUrl: 'http://127.0.0.1:1', token: 'x' });
    const down = await unwrap(api.GET('/healthz')).catch((e: unknown) => e);
    expect(down).to.be.instanceOf(TroupeUnreachableError);
    expect((down as Error).message).to.contain('cannot reach Troupe at http://127.0.0.1:1');
  });
});
