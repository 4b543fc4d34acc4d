import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { TestNode } from '../support/node.js';

/**
 * Two provisioned orgs, each with one of every resource the routes let a client create generically, and a map from a
 * route template's path parameter to the id of that org's resource. The walk uses the map to aim a route at A's own
 * resource (so hostile input reaches the handler) or at B's (tenancy).
 */
export interface OrgWorld {
  readonly name: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly ownerToken: string;
  readonly adminToken: string;
  readonly memberToken: string;
  readonly viewerToken: string;
  readonly apiKey: string;
  readonly runtimeJwt: string;
  readonly workerId: string;
  /** Every kind of credential the org has, each with the OpenAPI security scheme it is presented under. */
  readonly credentials: readonly Credential[];
  /** Resource ids by kind (workflow, policy, team, …); absent when the route to create one refused. */
  readonly ids: Readonly<Record<string, string>>;
  /** Values for body members that must name this org's things (`projectId`, `workerId`, …) to get past validation. */
  readonly hints: Readonly<Record<string, unknown>>;
  /** Strings only this org's data contains (names, emails, ids): seeing one in another org's answer is a leak. */
  readonly markers: readonly string[];
}

/**
 * One way of calling as the org: a bearer token, or the browser session cookie (writes with it carry
 * `Sec-Fetch-Site: same-origin`, as a page of this origin would). `role` says what the credential may do, for the
 * role matrix: 'reader' changes nothing, 'worker' is a member or a write key, 'manager' an admin or owner.
 */
export interface Credential {
  readonly name: string;
  readonly scheme: 'userToken' | 'sessionCookie' | 'apiKey' | 'machineToken' | 'runtimeJwt';
  readonly role: 'reader' | 'worker' | 'manager' | 'runtime';
  readonly headers: Readonly<Record<string, string>>;
}

const bearer = (name: string, scheme: Credential['scheme'], role: Credential['role'], token: string): Credential =>
  ({ name, scheme, role, headers: { authorization: `Bearer ${token}` } });

export interface World {
  readonly a: OrgWorld;
  readonly b: OrgWorld;
  /** The percent-encoded path segment that names `org`'s resource for this template's parameter. */
  segmentFor(template: string, param: string, org: OrgWorld): string;
  /**
   * Whether B's value for this parameter, sent by A, is a tenancy case: the parameter names a resource an org owns,
   * and the method does not create one under a client-chosen name (PUT on a template slug makes A's own template).
   */
  ownsResource(template: string, param: string, method: string): boolean;
  /** The client picks the value (a template slug, an interview channel): a well-formed unknown one may be accepted. */
  clientNamed(template: string, param: string): boolean;
}

const NOTHING = '00000000-0000-4000-8000-00000000dead';

/**
 * Which resource a template's parameter names. First match wins; order from specific to general. `owned: false`
 * marks values that are names in a fixed vocabulary, not resources (a provider, a credential kind, a version).
 */
const parameterTable: { match: RegExp; param: string; kind: string; owned: boolean; clientNamed?: true }[] = [
  { match: /./, param: 'orgId', kind: 'orgId', owned: true },
  { match: /./, param: 'projectId', kind: 'projectId', owned: true },
  { match: /\/keys\/\{id\}/, param: 'id', kind: 'apiKey', owned: true },
  { match: /\/registration-tokens\/\{id\}/, param: 'id', kind: 'registrationToken', owned: true },
  { match: /^\/api\/org\/teams\/\{id\}/, param: 'id', kind: 'team', owned: true },
  { match: /^\/api\/policies\/\{id\}/, param: 'id', kind: 'policy', owned: true },
  { match: /^\/api\/(public\/)?sessions\/\{id\}/, param: 'id', kind: 'session', owned: true },
  { match: /^\/api\/daemon\/mutations\/\{id\}/, param: 'id', kind: 'mutation', owned: true },
  { match: /^\/api\/workflows\/\{id\}/, param: 'id', kind: 'workflow', owned: true },
  { match: /^\/api\/workflow-runs\/\{runId\}/, param: 'runId', kind: 'run', owned: true },
  { match: /^\/api\/approval-gates\/\{id\}/, param: 'id', kind: 'gate', owned: true },
  { match: /^\/api\/templates\/\{slug\}/, param: 'slug', kind: 'template', owned: true, clientNamed: true },
  { match: /^\/api\/agent-cards\/\{id\}/, param: 'id', kind: 'agentCard', owned: true },
  { match: /^\/api\/a2a\/agents\/\{id\}/, param: 'id', kind: 'a2aAgent', owned: true },
  { match: /\/authoring\/proposals\/\{id\}/, param: 'id', kind: 'proposal', owned: true },
  { match: /\/repositories\/\{id\}/, param: 'id', kind: 'repository', owned: true },
  { match: /\/integrations\/\{provider\}/, param: 'provider', kind: 'fixed:linear', owned: false },
  { match: /^\/api\/webhooks\/ingest\/\{provider\}/, param: 'provider', kind: 'fixed:linear', owned: false },
  { match: /\/credentials\/\{kind\}/, param: 'kind', kind: 'fixed:github-token', owned: false },
  { match: /\/versions\/\{version\}/, param: 'version', kind: 'fixed:1', owned: false },
  // Interview ids are chosen by the worker; the channel is scoped by the caller's org, so an id is not a resource.
  { match: /^\/api\/interview\/\{id\}/, param: 'id', kind: 'fixed:hostile-walk-interview', owned: false, clientNamed: true },
];

function entryFor(template: string, param: string) {
  return parameterTable.find((e) => e.param === param && e.match.test(template));
}

export async function buildWorld(t: TestNode, loopback: string): Promise<World> {
  const [a, b] = await Promise.all([buildOrg(t, 'alpha', loopback), buildOrg(t, 'bravo', loopback)]);
  return {
    a, b,
    segmentFor(template, param, org) {
      const entry = entryFor(template, param);
      if (!entry) return NOTHING;
      if (entry.kind.startsWith('fixed:')) return encodeURIComponent(entry.kind.slice('fixed:'.length));
      const value = entry.kind === 'orgId' ? org.orgId : entry.kind === 'projectId' ? org.projectId : org.ids[entry.kind];
      return encodeURIComponent(value ?? NOTHING);
    },
    ownsResource(template, param, method) {
      const entry = entryFor(template, param);
      return entry?.owned === true && !(entry.clientNamed && method === 'PUT');
    },
    clientNamed(template, param) {
      return entryFor(template, param)?.clientNamed === true;
    },
  };
}

async function created(t: TestNode, what: string, method: string, path: string, token: string, body: unknown): Promise<any> {
  const res = await t.call(method, path, { token, body });
  expect(res.status, `set-up: ${what}: ${res.text}`).to.be.oneOf([200, 201]);
  return res.json;
}

async function buildOrg(t: TestNode, name: string, loopback: string): Promise<OrgWorld> {
  const secret = `${name}-secret-${randomBytes(4).toString('hex')}`;
  const provisioned = await created(t, 'org', 'POST', '/api/admin/orgs', t.adminToken, { name: secret, owner: { email: `owner-${secret}@example.test` } });
  const orgId: string = provisioned.org.id;
  const projectId: string = provisioned.project.id;
  const ownerToken: string = provisioned.userToken;
  const user = async (role: string) =>
    (await created(t, `${role} user`, 'POST', `/api/admin/orgs/${orgId}/users`, t.adminToken, { email: `${role}-${secret}@example.test`, role })).userToken as string;
  const [adminToken, memberToken, viewerToken] = await Promise.all([user('admin'), user('member'), user('viewer')]);
  // A viewer of the org who administers its first project: project roles must not reach beyond their project.
  const projectAdminToken = (await created(t, 'project-scoped user', 'POST', `/api/admin/orgs/${orgId}/users`, t.adminToken, {
    email: `project-admin-${secret}@example.test`, role: 'viewer', projects: [{ id: projectId, role: 'admin' }],
  })).userToken as string;
  const password = `pw-${secret}`;
  await created(t, 'password user', 'POST', `/api/admin/orgs/${orgId}/users`, t.adminToken, { email: `cookie-${secret}@example.test`, role: 'admin', password });
  const login = await t.call('POST', '/api/auth/login', { body: { email: `cookie-${secret}@example.test`, password } });
  expect(login.status, `set-up: login: ${login.text}`).to.equal(200);
  const cookie = /troupe_session=[^;]+/.exec(login.headers.get('set-cookie') ?? '')?.[0];
  expect(cookie, 'set-up: session cookie').to.be.a('string');
  const keyOf = async (scopes: string[]) =>
    (await created(t, `${scopes.join('+')} key`, 'POST', `/api/org/${orgId}/keys`, ownerToken, { name: `key-${scopes.join('-')}-${secret}`, scopes })).fullKey as string;
  const [readKey, writeKey] = await Promise.all([keyOf(['read']), keyOf(['read', 'write'])]);
  const client = await created(t, 'machine client', 'POST', '/api/admin/m2m-clients', t.adminToken, { orgId, name: `m2m-${secret}`, scopes: ['admin'] });
  const issued = await t.call('POST', '/api/oauth/token', {
    rawBody: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  expect(issued.status, `set-up: machine token: ${issued.text}`).to.equal(200);
  const machineToken: string = issued.json.access_token;
  const registered = await t.call('POST', '/v1/daemon/register', { body: { registrationToken: provisioned.registrationToken, hostname: `host-${secret}`, maxAgents: 2 } });
  expect(registered.status, `set-up: daemon: ${registered.text}`).to.equal(200);
  const daemon = registered.json;
  const ids: Record<string, string> = { registrationToken: provisioned.registrationTokenId };
  const own = (path: string, body: unknown, method = 'POST') => t.call(method, path, { token: ownerToken, body });

  const yaml = `schemaVersion: v2\nname: ${secret}\ntrigger: {type: manual}\nnodes:\n  - {id: ok, kind: approval, title: "${secret} go?"}\nedges: []\n`;
  const workflow = await created(t, 'workflow', 'POST', `/api/projects/${projectId}/workflows`, ownerToken, { name: `wf-${secret}`, definitionYaml: yaml });
  ids.workflow = workflow.id;
  await created(t, 'publish workflow', 'PATCH', `/api/workflows/${workflow.id}`, ownerToken, { status: 'published' });
  ids.run = (await created(t, 'workflow run', 'POST', `/api/workflows/${workflow.id}/runs`, ownerToken, {})).runId;

  const cedarPolicy = 'permit (principal is Troupe::User, action == Troupe::Action::"read", resource is Troupe::Incident) when { principal.orgId == resource.orgId };';
  const results = await Promise.all([
    own('/api/policies', { name: `policy-${secret}`, cedarPolicy }),
    own('/api/org/teams', { name: `team-${secret}` }),
    own('/api/agent-dispatch', { projectId, prompt: `prompt ${secret}`, trackerIssue: 'ENG-7' }),
    own('/api/approval-gates', { projectId, title: `gate ${secret}`, issue: 'ENG-7' }),
    own('/api/daemon/mutations', { workerHostId: daemon.workerId, op: 'pool.deleted', params: { poolId: `pool-${secret}` } }),
    own(`/api/org/${orgId}/keys`, { name: `key-${secret}` }),
    own(`/api/templates/${secret}`, { name: `template ${secret}`, definitionYaml: yaml }, 'PUT'),
    own('/api/agent-cards', { name: `card-${secret}`, prompt: `card prompt ${secret}` }),
    own('/api/a2a/agents', { url: `${loopback}/${secret}` }),
    own(`/api/org/${orgId}/requesters`, { name: `requester-${secret}`, mode: 'light' }),
    own(`/api/org/${orgId}/credentials/github-token`, { provider: 'static', value: `value-${secret}` }, 'PUT'),
    own(`/api/projects/${projectId}/repositories`, { url: `https://git.example.test/${secret}/app.git` }),
  ]);
  const [policy, team, session, gate, mutation, key, template, card, agent, requester, credential, repository] = results.map((r, i) => {
    expect(r.status, `set-up resource #${i}: ${r.text}`).to.be.oneOf([200, 201]);
    return r.json;
  });
  ids.policy = policy.policy.id;
  ids.team = team.team.id;
  ids.session = session.sessionId;
  ids.gate = gate.gate.id;
  ids.mutation = mutation.mutation.id;
  ids.apiKey = key.id ?? key.apiKey?.id;
  ids.template = secret;
  ids.agentCard = card.id ?? card.card?.id ?? card.agentCard?.id;
  ids.a2aAgent = agent.agent.id;
  ids.requester = requester.requester.id;
  ids.repository = repository.id;
  void template; void credential;
  await created(t, 'team member', 'POST', `/api/org/teams/${ids.team}/members`, ownerToken, { userId: provisioned.owner.id });
  for (const [kind, id] of Object.entries(ids)) expect(id, `set-up: id of ${kind}`).to.be.a('string');

  const credentials: Credential[] = [
    bearer('owner user token', 'userToken', 'manager', ownerToken),
    bearer('admin user token', 'userToken', 'manager', adminToken),
    bearer('member user token', 'userToken', 'worker', memberToken),
    bearer('viewer user token', 'userToken', 'reader', viewerToken),
    bearer('project-admin viewer', 'userToken', 'worker', projectAdminToken),
    { name: 'session cookie', scheme: 'sessionCookie', role: 'manager', headers: { cookie: cookie!, 'sec-fetch-site': 'same-origin' } },
    bearer('admin-scope API key', 'apiKey', 'manager', provisioned.apiKey.fullKey),
    bearer('write-scope API key', 'apiKey', 'worker', writeKey),
    bearer('read-scope API key', 'apiKey', 'reader', readKey),
    bearer('machine token', 'machineToken', 'manager', machineToken),
    bearer('runtime token', 'runtimeJwt', 'runtime', daemon.runtimeJwt),
  ];
  return {
    name, orgId, projectId, ownerToken, adminToken, memberToken, viewerToken, credentials,
    apiKey: provisioned.apiKey.fullKey, runtimeJwt: daemon.runtimeJwt, workerId: daemon.workerId, ids,
    hints: {
      orgId, projectId, workerId: daemon.workerId, workerHostId: daemon.workerId, userId: provisioned.owner.id,
      definitionYaml: yaml, cedarPolicy, policyId: ids.policy, policyVersion: 1, agentCardId: ids.agentCard,
      op: 'pool.deleted', params: { poolId: `pool-${secret}` },
    },
    markers: [secret],
  };
}

/**
 * Everything the org can read about its own resources, as the org's owner sees it: compared before and after a walk,
 * any difference is a change the walk was not allowed to make.
 */
export async function readBack(t: TestNode, org: OrgWorld): Promise<Record<string, unknown>> {
  const reads: Record<string, string> = {
    workflow: `/api/workflows/${org.ids.workflow}`,
    workflowVersions: `/api/workflows/${org.ids.workflow}/versions`,
    workflows: `/api/workflows?projectId=${org.projectId}`,
    run: `/api/workflow-runs/${org.ids.run}`,
    policy: `/api/policies/${org.ids.policy}`,
    policies: '/api/policies',
    teamMembers: `/api/org/teams/${org.ids.team}/members`,
    session: `/api/public/sessions/${org.ids.session}`,
    sessions: '/api/sessions?trackerIssue=ENG-7',
    gates: '/api/approval-gates?issue=ENG-7',
    mutations: `/api/daemon/mutations?workerHostId=${org.workerId}`,
    template: `/api/templates/${org.ids.template}`,
    agentCard: `/api/agent-cards/${org.ids.agentCard}`,
    a2aAgent: `/api/a2a/agents/${org.ids.a2aAgent}`,
    a2aAgents: '/api/a2a/agents',
    requesters: `/api/org/${org.orgId}/requesters`,
    repositories: `/api/projects/${org.projectId}/repositories`,
    audit: '/api/audit?limit=100',
    whoami: '/api/cli/whoami',
  };
  const out: Record<string, unknown> = {};
  await Promise.all(Object.entries(reads).map(async ([name, path]) => {
    const res = await t.call('GET', path, { token: org.ownerToken });
    out[name] = { status: res.status, body: res.json ?? res.text };
  }));
  return out;
}
