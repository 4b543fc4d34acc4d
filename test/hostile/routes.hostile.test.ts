// Invariant (issue 16, "keep it closed"): every route the node serves, read from its own /api/openapi.json (so routes
// added later are covered without touching these files), holds these standing rules:
//   1. bad input (malformed or mistyped bodies, invalid UTF-8 and other encodings, lone surrogates, nesting past 64,
//      wrong content type, oversize bodies, hostile path and query values) gets a 4xx `{error, code}` and changes
//      nothing; no route answers 5xx to a client's mistake (routes.input.hostile.test.ts);
//   2. tenant matrix: another org's resource is never visible or changeable: every credential kind of org A (owner,
//      admin, member, viewer and project-scoped users, the session cookie, admin/write/read API keys, a machine
//      token, a runtime token) on org B's ids is 404 (403 for an org/project guard or a lesser role), and B reads its
//      resources back unchanged (routes.tenancy.hostile.test.ts);
//   3. every served route is documented, a caller without credentials or with a forged or tampered one is refused
//      (401) unless the document says the operation is public; admin and org credentials never cross (403) (here);
//   4. role matrix: viewers and read keys change nothing; members, write keys and project roles get no action that
//      only admins and owners hold (learned per route from what the owner's call asks of Cedar) (here);
//   5. every URL a body takes refuses internal address forms (SSRF); webhook deliveries are accepted only when
//      validly signed, fresh and first, for the org their URL names (routes.external.hostile.test.ts);
//   6. policy churn: a third org's decisions equal a fresh Cedar evaluation of its active set while two other orgs
//      create and archive policies (routes.tenancy.hostile.test.ts).
// Each file walks a node and a world of its own (walk.ts). Defects in other rooms' routes are listed in
// `knownDefects` in walk.ts: reported with console.warn, not failed on, so the owner can fix them and delete the
// entry. Anything not listed fails.
import { generateKeyPairSync, sign as cryptoSign } from 'node:crypto';
import { expect } from 'chai';
import type { TestNode } from '../support/node.js';
import { label, type WalkedOperation } from '../support/openapi-walk.js';
import { readBack, type World } from './world.js';
import { CONCURRENCY, describeWalk, Findings, isClientError, isErrorBody, isNotServerError, pool, send } from './walk.js';

describeWalk('credentials and roles', (walk) => {
  const { a, credentialFor, pathFor, sampleInit } = walk;
  let t: TestNode, world: World, operations: WalkedOperation[];
  before(() => ({ t, world, operations } = walk));

  it('serves only documented routes: a known path with another method is 405, an unknown path is 404', async () => {
    const findings = new Findings('documented');
    const documented = new Map<string, Set<string>>();
    for (const op of operations) (documented.get(op.template) ?? documented.set(op.template, new Set()).get(op.template)!).add(op.method);
    const probes: { op: WalkedOperation; method: string }[] = [];
    for (const op of operations) {
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
        if (!documented.get(op.template)!.has(method) && !probes.some((p) => p.op.template === op.template && p.method === method)) probes.push({ op, method });
      }
    }
    await pool(probes, CONCURRENCY, async ({ op, method }) => {
      const path = pathFor(op, a());
      const answer = await send(t.url, method, path, { token: credentialFor(op, a()) });
      findings.check({ ...op, method }, 'undocumented method', `${method} ${path}`, answer, answer.status === 405 && isErrorBody(op, answer), '405 {error, code}');
    });
    const unknown = await send(t.url, 'GET', '/api/hostile-walk-no-such-route', { token: a().ownerToken });
    expect(unknown.status).to.equal(404);
    expect(unknown.json?.code).to.equal('ROUTE_NOT_FOUND');
    findings.finish();
  });

  it('refuses a caller without credentials, or with a forged one, on every non-public route (401 {error, code})', async () => {
    const findings = new Findings('auth');
    const publicOps = operations.filter((op) => op.schemes.length === 0).map(label);
    console.log(`    public per the document: ${publicOps.join(', ')}`);
    await pool(operations, CONCURRENCY, async (op) => {
      const path = pathFor(op, a());
      const init = sampleInit(op);
      const bare = await send(t.url, op.method, path, init);
      if (op.schemes.length === 0) {
        findings.check(op, 'public, no credential', `${op.method} ${path}`, bare, isNotServerError(op, bare), 'no 5xx');
        return;
      }
      findings.check(op, 'no credential', `${op.method} ${path}`, bare, bare.status === 401 && isErrorBody(op, bare), '401 {error, code}');
      for (const forged of ['trp_' + 'A'.repeat(40), 'eyJhbGciOiJFZERTQSJ9.e30.AAAA', 'x'.repeat(4000)]) {
        const answer = await send(t.url, op.method, path, { ...init, token: forged });
        findings.check(op, 'forged credential', `${op.method} ${path} with a forged bearer`, answer, answer.status === 401 && isErrorBody(op, answer), '401 {error, code}');
      }
    });
    findings.finish();
  });

  it('keeps credentials in their lane: admin token on org routes, org credentials on admin routes, keys on human or runtime routes → 403', async () => {
    const findings = new Findings('lanes');
    await pool(operations.filter((op) => op.schemes.length > 0), CONCURRENCY, async (op) => {
      const path = pathFor(op, a());
      const init = sampleInit(op);
      const refusedWith = async (caseName: string, token: string) => {
        const answer = await send(t.url, op.method, path, { ...init, token });
        findings.check(op, caseName, `${op.method} ${path}`, answer, answer.status === 403 && isErrorBody(op, answer), '403 {error, code}');
      };
      if (op.schemes.includes('adminToken')) {
        await refusedWith('org user token on an admin route', a().ownerToken);
        await refusedWith('org API key on an admin route', a().apiKey);
        await refusedWith('runtime token on an admin route', a().runtimeJwt);
        return;
      }
      await refusedWith('admin token on an org route', t.adminToken);
      if (!op.schemes.includes('apiKey')) await refusedWith('API key where the document does not take one', a().apiKey);
      if (!op.schemes.includes('runtimeJwt')) await refusedWith('runtime token where the document does not take one', a().runtimeJwt);
      if (!op.schemes.includes('userToken')) await refusedWith('user token where the document does not take one', a().ownerToken);
    });
    findings.finish();
  });

  /** Self-service writes any authenticated caller may make for itself, and POSTs that only read. */
  const selfService = new Set([
    'POST /api/auth/logout', 'POST /api/notifications/web-push/subscribe', 'DELETE /api/notifications/web-push/subscribe',
    'POST /api/notifications/web-push/test', 'POST /api/projects/{projectId}/authoring/conversation',
    'POST /api/projects/{projectId}/authoring/synthesize', 'POST /api/projects/{projectId}/authoring/simulate',
  ]);
  /** Actions only admins and owners hold by default (schemas/cedar/default.cedar); publish is a project admin's too. */
  const managerActions = new Set(['manage-keys', 'manage-members', 'manage-credentials', 'manage-policies', 'manage-org', 'enqueue-mutation']);

  it('refuses forged and tampered credentials of every shape with 401', async () => {
    const findings = new Findings('forged');
    const [header, payload] = a().ownerToken.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const { privateKey } = generateKeyPairSync('ed25519');
    const signedElsewhere = `${header}.${payload}`;
    const otherSignature = cryptoSign(null, Buffer.from(signedElsewhere), privateKey).toString('base64url');
    const forged: Record<string, string> = {
      'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
      'signed by another key': `${signedElsewhere}.${otherSignature}`,
      "claims moved to B's org": `${header}.${b64({ ...claims, org: world.b.orgId })}.${a().ownerToken.split('.')[2]}`,
      'admin role claimed': `${header}.${b64({ ...claims, role: 'owner', scope: 'admin' })}.${a().ownerToken.split('.')[2]}`,
      'runtime token as user': `${a().runtimeJwt.split('.')[0]}.${b64({ ...claims, typ: 'runtime' })}.${a().runtimeJwt.split('.')[2]}`,
      'API key prefix with another secret': `${a().apiKey.slice(0, 12)}${'Z'.repeat(a().apiKey.length - 12)}`,
      'API key with one character changed': `${a().apiKey.slice(0, -1)}${a().apiKey.endsWith('a') ? 'b' : 'a'}`,
      'empty bearer': '',
    };
    const routes = operations.filter((op) => op.schemes.length > 0 && !op.schemes.includes('adminToken'));
    await pool(routes, CONCURRENCY, async (op) => {
      const path = pathFor(op, a());
      for (const [name, token] of Object.entries(forged)) {
        const answer = await send(t.url, op.method, path, { headers: { authorization: `Bearer ${token}` }, ...sampleInit(op) });
        findings.check(op, `forged: ${name}`, `${op.method} ${path}`, answer, answer.status === 401 && isErrorBody(op, answer), '401 {error, code}');
      }
      const cookie = await send(t.url, op.method, path, { headers: { cookie: `troupe_session=${forged['signed by another key']}` }, ...sampleInit(op) });
      findings.check(op, 'forged session cookie', `${op.method} ${path}`, cookie, cookie.status === 401 && isErrorBody(op, cookie), '401 {error, code}');
    });
    findings.finish();
  });

  // Last: the owner's probes below make real changes (they stop sessions, revoke a registration token).
  it('role matrix: readers change nothing; members, write keys and project roles get no manager action, whatever the route', async () => {
    const findings = new Findings('roles');
    const writes = operations.filter((op) => op.method !== 'GET' && op.schemes.some((s) => s !== 'adminToken' && s !== 'runtimeJwt') && op.body?.kind !== 'raw');
    // What each route asks of Cedar when an owner calls it: learned by watching the authorizer, one route at a time.
    const asked = new Map<string, Set<string>>();
    const authz = t.node.deps.authz;
    const original = authz.authorize.bind(authz);
    let current: Set<string> | undefined;
    (authz as { authorize: typeof authz.authorize }).authorize = async (principal, action, resource) => {
      current?.add(action);
      return original(principal, action, resource);
    };
    try {
      for (const op of writes) {
        if (selfService.has(label(op))) continue;
        current = new Set();
        await send(t.url, op.method, pathFor(op, a()), { token: a().ownerToken, ...sampleInit(op) });
        asked.set(label(op), current);
      }
    } finally {
      current = undefined;
      (authz as { authorize: typeof authz.authorize }).authorize = original;
    }
    const managed = writes.filter((op) => [...(asked.get(label(op)) ?? [])].some((action) => managerActions.has(action)));
    console.log(`    role matrix: ${writes.length} write operations, ${managed.length} ask for a manager action`);
    expect(managed.length, 'the owner reached the manager actions of keys, credentials, policies, mutations').to.be.greaterThan(5);
    const before = await readBack(t, world.a);
    await pool(writes, CONCURRENCY, async (op) => {
      const path = pathFor(op, a());
      for (const credential of a().credentials) {
        if (!op.schemes.includes(credential.scheme)) continue;
        const mustRefuse = (credential.role === 'reader' && !selfService.has(label(op))) || (credential.role === 'worker' && managed.includes(op));
        if (!mustRefuse) continue;
        const answer = await send(t.url, op.method, path, { headers: credential.headers, ...sampleInit(op) });
        findings.check(op, `${credential.role} ${credential.name}`, `${op.method} ${path}`, answer, isClientError(op, answer), '4xx {error, code}');
      }
    });
    // Readers' and workers' refused writes changed nothing the owner can see (the owner's own probes came before).
    expect(await readBack(t, world.a), 'refused writes changed org A').to.deep.equal(before);
    findings.finish();
  });
});
