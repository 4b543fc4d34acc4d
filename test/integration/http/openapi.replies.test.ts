// Invariant: what a node answers matches what its OpenAPI document says it answers, for the replies the generated
// client's callers rely on most: the daemon protocol (register, heartbeat with a delivered mutation, poll with an
// offered session, mutation history), a session's detail and the operator's session list, workflows, runs' approval
// gates, the audit page, templates, proposals and the router and palette views. Each reply is fetched through the
// typed client and validated against the schema the served document gives its operation and status.
import { expect } from 'chai';
import type { ValidateFunction } from 'ajv';
import { ajv } from '../../../schemas/ajv.js';
import { createTroupeClient, unwrap, type TroupeApi } from '../../../http/client/index.js';
import { startTestNode, type TestNode } from '../../support/node.js';

const template = `schemaVersion: v2
name: triage
trigger: {type: manual}
nodes:
  - {id: plan, kind: agent, prompt: "Plan the fix"}
edges: []
`;

describe('replies match the OpenAPI document', function () {
  this.timeout(120_000);
  let t: TestNode;
  let doc: any;
  const validators = new Map<string, ValidateFunction>();

  /** Validates `body` against the documented reply of `method path` with `status`; returns it for chaining. */
  const conforms = <T>(method: string, path: string, status: number, body: T): T => {
    const key = `${method} ${path} ${status}`;
    let validate = validators.get(key);
    if (!validate) {
      const schema = doc.paths[path]?.[method]?.responses?.[String(status)]?.content?.['application/json']?.schema;
      expect(schema, `${key} is documented`).to.be.an('object');
      validate = ajv.compile(schema);
      validators.set(key, validate);
    }
    expect(validate(body), `${key}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 400)}`).to.equal(true);
    return body;
  };

  before(async () => {
    t = await startTestNode();
    doc = (await t.call('GET', '/api/openapi.json')).json;
  });
  after(async () => { await t?.close(); });

  it('daemon protocol, sessions and the operator list', async () => {
    const admin = createTroupeClient({ baseUrl: t.url, token: t.adminToken });
    const org = conforms('post', '/api/admin/orgs', 201, await unwrap(admin.POST('/api/admin/orgs', { body: { name: 'Conform', owner: { email: 'o@conform.test' } } })));
    const api = createTroupeClient({ baseUrl: t.url, token: org.apiKey.fullKey });
    const anon = createTroupeClient({ baseUrl: t.url });

    const registered = conforms('post', '/v1/daemon/register', 200, await unwrap(anon.POST('/v1/daemon/register', {
      body: { registrationToken: org.registrationToken, hostname: 'conform-host', maxAgents: 2 },
    })));
    const worker = createTroupeClient({ baseUrl: t.url, token: registered.runtimeJwt });
    const workerId = registered.workerId;

    const enqueued = conforms('post', '/api/daemon/mutations', 201, await unwrap(api.POST('/api/daemon/mutations', {
      body: { workerHostId: workerId, op: 'modelAccess.set', params: { allow: ['model-a'] } },
    })));
    expect(enqueued.mutation.status).to.equal('pending');
    const beat = conforms('post', '/api/daemon/heartbeat', 200, await unwrap(worker.POST('/api/daemon/heartbeat', { body: { workerId, activeSessionIds: [], load: 0 } })));
    expect(beat.mutations.map((m) => m.op)).to.deep.equal(['modelAccess.set']);
    const history = conforms('get', '/api/daemon/mutations', 200, await unwrap(api.GET('/api/daemon/mutations', { params: { query: { workerHostId: workerId } } })));
    expect(history.mutations[0]?.status).to.equal('delivered');

    const dispatched = conforms('post', '/api/agent-dispatch', 201, await unwrap(api.POST('/api/agent-dispatch', {
      body: { projectId: org.project.id, prompt: 'Conform', trackerIssue: 'ENG-7' },
    })));
    const polled = conforms('post', '/api/daemon/poll', 200, await unwrap(worker.POST('/api/daemon/poll', { body: { workerId, capacity: 2 } })));
    expect(polled.sessions.map((s) => s.id)).to.include(dispatched.sessionId);
    const id = dispatched.sessionId;
    for (const status of ['claimed', 'running'] as const) {
      conforms('post', '/api/sessions/{id}/status', 200, await unwrap(worker.POST('/api/sessions/{id}/status', { params: { path: { id } }, body: { status, workerId } })));
    }
    conforms('get', '/api/public/sessions/{id}', 200, await unwrap(api.GET('/api/public/sessions/{id}', { params: { path: { id } } })));
    conforms('post', '/api/public/sessions/{id}/prompt', 200, await unwrap(api.POST('/api/public/sessions/{id}/prompt', { params: { path: { id } }, body: { prompt: 'and more' } })));
    const again = conforms('post', '/api/daemon/poll', 200, await unwrap(worker.POST('/api/daemon/poll', { body: { workerId, capacity: 0 } })));
    expect(again.sessions[0]?.queuedPrompts?.[0]?.text).to.equal('and more');
    conforms('post', '/api/public/sessions/{id}/stop', 200, await unwrap(api.POST('/api/public/sessions/{id}/stop', { params: { path: { id } } })));
    const detail = conforms('get', '/api/public/sessions/{id}', 200, await unwrap(api.GET('/api/public/sessions/{id}', { params: { path: { id } } })));
    expect(detail.worker?.hostname).to.equal('conform-host');
    const listed = conforms('get', '/api/fleet/sessions', 200, await unwrap(api.GET('/api/fleet/sessions')));
    expect(listed.sessions[0]).to.include({ id, status: 'stopped', trackerIssue: 'ENG-7' });
  });

  it('workflows, approval gates, audit, templates, proposals, router and palette', async () => {
    const admin = createTroupeClient({ baseUrl: t.url, token: t.adminToken });
    const org = await unwrap(admin.POST('/api/admin/orgs', { body: { name: 'Views', owner: { email: 'o@views.test' } } }));
    const owner: TroupeApi = createTroupeClient({ baseUrl: t.url, token: org.userToken });
    const projectId = org.project.id;

    const workflow = conforms('post', '/api/projects/{projectId}/workflows', 201, await unwrap(owner.POST('/api/projects/{projectId}/workflows', {
      params: { path: { projectId } }, body: { name: 'triage', definitionYaml: template, nodes: [{ id: 'plan' }], edges: [] },
    })));
    const workflows = conforms('get', '/api/workflows', 200, await unwrap(owner.GET('/api/workflows')));
    expect(workflows.workflows.map((w) => w.id)).to.deep.equal([workflow.id]);

    const gate = conforms('post', '/api/approval-gates', 201, await unwrap(owner.POST('/api/approval-gates', { body: { projectId, title: 'Ship it?' } })));
    conforms('get', '/api/approval-gates', 200, await unwrap(owner.GET('/api/approval-gates')));
    const decided = conforms('post', '/api/approval-gates/{id}/decide', 200, await unwrap(owner.POST('/api/approval-gates/{id}/decide', {
      params: { path: { id: gate.gate.id } }, body: { decision: 'approved' },
    })));
    expect(decided.gate.status).to.equal('approved');

    await new Promise((r) => setTimeout(r, 500)); // the audit outbox writes a moment after the reply
    const audit = conforms('get', '/api/audit', 200, await unwrap(owner.GET('/api/audit')));
    expect(audit.entries.length).to.be.greaterThan(0);

    // 201 when the draft was created, 200 when edited: one body, documented under 200.
    const saved = conforms('put', '/api/templates/{slug}', 200, await unwrap(owner.PUT('/api/templates/{slug}', {
      params: { path: { slug: 'triage' } }, body: { name: 'Triage', definitionYaml: template },
    })));
    expect(saved).to.include({ slug: 'triage', liveVersion: null });
    conforms('get', '/api/templates/{slug}/diff', 200, await unwrap(owner.GET('/api/templates/{slug}/diff', { params: { path: { slug: 'triage' } } })));
    conforms('post', '/api/templates/{slug}/publish', 200, await unwrap(owner.POST('/api/templates/{slug}/publish', { params: { path: { slug: 'triage' } }, body: {} })));
    conforms('get', '/api/templates/{slug}', 200, await unwrap(owner.GET('/api/templates/{slug}', { params: { path: { slug: 'triage' } } })));

    conforms('get', '/api/projects/{projectId}/authoring/proposals', 200,
      await unwrap(owner.GET('/api/projects/{projectId}/authoring/proposals', { params: { path: { projectId } } })));
    conforms('get', '/api/router/performance', 200, await unwrap(owner.GET('/api/router/performance')));
    conforms('get', '/api/projects/{projectId}/palette', 200, await unwrap(owner.GET('/api/projects/{projectId}/palette', { params: { path: { projectId } } })));
  });
});
