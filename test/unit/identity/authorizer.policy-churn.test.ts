/**
 * Invariant: an authorization decision is a function of the exact policy set active for the org now. Pre-parsed
 * policy sets live in a bounded number of reusable slots and decisions are memoised; neither may let a set an
 * org had earlier (or another org's set) answer for the org's current one.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import * as cedar from '../../../actors/services/cedar/engine.js';
import { createAuthorizer, loadDefaultPolicySet, splitPolicies, type Action, type CedarAuthorizer } from '../../../actors/services/identity/authorizer.js';
import { enforcementText } from '../../../actors/kinds/policy/cedar-text.js';
import type { ResourceRef } from '../../../actors/services/identity/ports.js';
import type { OrgRole, Principal } from '../../../actors/services/identity/principal.js';
import { CEDAR_NAMESPACE, cedarSchemaText } from '../../../schemas/cedar/index.js';

const orgs = [
  '11111111-1111-4111-8111-111111111111',
  '22222222-2222-4222-8222-222222222222',
  '33333333-3333-4333-8333-333333333333',
] as const;
const [ORG_X] = orgs;

/** Stored policies an org might hold: grants beyond the defaults, refusals, and harmless statements. */
const policyPool = [
  'permit (principal, action, resource);',
  'permit (principal is Troupe::User, action == Troupe::Action::"manage-keys", resource) when { principal.orgRole == "viewer" };',
  'permit (principal is Troupe::User, action == Troupe::Action::"publish", resource) when { principal.orgRole == "member" };',
  'forbid (principal is Troupe::User, action == Troupe::Action::"read", resource is Troupe::Audit) when { principal.orgRole == "member" };',
  'forbid (principal is Troupe::User, action == Troupe::Action::"manage-keys", resource) when { principal.orgRole == "admin" };',
  'forbid (principal is Troupe::ApiKey, action == Troupe::Action::"dispatch", resource);',
  'permit (principal is Troupe::ApiKey, action == Troupe::Action::"manage-credentials", resource);',
  'forbid (principal, action == Troupe::Action::"enqueue-mutation", resource) when { resource.orgId == "nobody" };',
];
const harmless = policyPool[7]!;
const permitAll = policyPool[0]!;

// Few enough that the same question comes back under different sets, which is where a stale answer would show.
const checkedActions: readonly Action[] = ['read', 'publish', 'manage-keys', 'manage-credentials'];
const checkedResources = ['Org', 'Audit', 'Credential'] as const;

/** Statements a stored policy may hold: the pool above, and statements that name a principal or resource by id. */
const statementPool = [
  ...policyPool,
  'permit (principal == Troupe::User:: "viewer-a", action == Troupe::Action::"manage-keys", resource);',
  'forbid (principal, action, resource) when { principal == Troupe::User::\n"admin-b" };',
  'permit (principal, action == Troupe::Action::"publish", resource == Troupe::Org::"Org-2");',
  'forbid (principal == Troupe::ApiKey::"key-write", action, resource);',
];

const viewer = (orgId: string): Principal => ({ kind: 'user', userId: `viewer-${orgId}`, orgId, orgRole: 'viewer', via: 'token' });
const userOf = (orgId: string, orgRole: OrgRole, who = orgId): Principal => ({ kind: 'user', userId: `${orgRole}-${who}`, orgId, orgRole, via: 'token' });
const keyOf = (orgId: string, scopes: string[]): Principal => ({ kind: 'apiKey', keyId: `key-${scopes.join('-')}`, orgId, scopes });
const resourceOf = (type: string, orgId: string, n = 1): ResourceRef => ({ type, id: `${type}-${n}`, orgId });

/**
 * Stored policies as the node keeps them: created, updated (a new version) and archived per org; the authorizer
 * reads the active ones through the node's own rewrite (`enforcementText`, ordered by id as storage returns them).
 */
class StoredPolicies {
  private readonly rows: { id: string; orgId: string; version: number; cedarPolicy: string; archived: boolean }[] = [];
  create(orgId: string, cedarPolicy: string): void {
    const id = `00000000-0000-4000-8000-${String(this.rows.length).padStart(12, '0')}`;
    this.rows.push({ id, orgId, version: 1, cedarPolicy, archived: false });
  }
  /** Changes the org's `pick`-th live policy (modulo how many it has); nothing when it has none. */
  update(orgId: string, pick: number, cedarPolicy: string): void {
    const live = this.live(orgId);
    const row = live[pick % Math.max(live.length, 1)];
    if (row) Object.assign(row, { cedarPolicy, version: row.version + 1 });
  }
  archive(orgId: string, pick: number): void {
    const live = this.live(orgId);
    const row = live[pick % Math.max(live.length, 1)];
    if (row) row.archived = true;
  }
  textFor = async (orgId: string): Promise<string> => enforcementText(this.live(orgId));
  private live(orgId: string) {
    return this.rows.filter((r) => r.orgId === orgId && !r.archived).sort((x, y) => x.id.localeCompare(y.id));
  }
}

/**
 * A decision to check: who (by role or key scope), on what, in which org's resource. A role is checked for two users
 * in turn, so an answer memoised for one of them is offered to the other.
 */
const checkCommand = fc.record({
  kind: fc.constant('check' as const), org: fc.nat(orgs.length - 1), acrossOrgs: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  who: fc.oneof(
    fc.record({ role: fc.constantFrom<OrgRole>('admin', 'member', 'viewer'), first: fc.constantFrom('a', 'b') }),
    fc.record({ scopes: fc.constantFrom(['read'], ['write']) }),
  ),
  action: fc.constantFrom(...checkedActions), resource: fc.constantFrom(...checkedResources), resourceN: fc.constantFrom(1, 2),
});

async function expectReferenceDecision(
  authz: CedarAuthorizer, textFor: (orgId: string) => Promise<string>, c: typeof checkCommand extends fc.Arbitrary<infer T> ? T : never,
): Promise<void> {
  const orgId = orgs[c.org]!;
  const principals = 'role' in c.who
    ? (c.who.first === 'a' ? ['a', 'b'] : ['b', 'a']).map((who) => userOf(orgId, (c.who as { role: OrgRole }).role, who))
    : [keyOf(orgId, [...c.who.scopes])];
  const resource = resourceOf(c.resource, c.acrossOrgs ? orgs[(c.org + 1) % orgs.length]! : orgId, c.resourceN);
  for (const principal of principals) {
    const got = await authz.check(principal, c.action, resource);
    const text = await textFor(resource.orgId);
    expect(got.allowed, `${JSON.stringify(c)} as ${JSON.stringify(principal)} with ${text}`).to.equal(referenceDecision(text, principal, c.action, resource));
  }
}

/** The org's stored policies, as the authorizer's `extraPolicies` hook reads them. */
class PolicyBook {
  private readonly texts = new Map<string, string>();
  set(orgId: string, policies: readonly string[]): void {
    this.texts.set(orgId, policies.join('\n'));
  }
  textFor = async (orgId: string): Promise<string> => this.texts.get(orgId) ?? '';
}

/** A reference decision: Cedar, stateless, on the defaults joined to the org's text, with no slot and no memo. */
function referenceDecision(extra: string, principal: Principal, action: Action, resource: ResourceRef): boolean {
  const ns = CEDAR_NAMESPACE;
  const principalEntity: cedar.EntityJson | undefined = principal.kind === 'user'
    ? { uid: { type: `${ns}::User`, id: principal.userId }, attrs: { orgId: principal.orgId, orgRole: principal.orgRole }, parents: [] }
    : principal.kind === 'apiKey'
      ? { uid: { type: `${ns}::ApiKey`, id: principal.keyId }, attrs: { orgId: principal.orgId, scopes: [...principal.scopes] }, parents: [] }
      : undefined;
  if (!principalEntity) throw new Error('the reference evaluates users and API keys');
  const orgParts = extra.trim() === '' ? {} : splitPolicies(extra, 'org.');
  if (typeof orgParts === 'string') throw new Error(orgParts);
  const answer = cedar.isAuthorized({
    principal: principalEntity.uid,
    action: { type: `${ns}::Action`, id: action },
    resource: { type: `${ns}::${resource.type}`, id: resource.id },
    context: {},
    schema: cedarSchemaText(),
    validateRequest: true,
    policies: { staticPolicies: { ...loadDefaultPolicySet().policies, ...orgParts } },
    entities: [principalEntity, { uid: { type: `${ns}::${resource.type}`, id: resource.id }, attrs: { orgId: resource.orgId }, parents: [] }],
  });
  if (answer.type === 'failure') return false;
  return answer.response.decision === 'allow' && answer.response.diagnostics.errors.length === 0;
}

describe('Cedar authorizer under policy churn', () => {
  it('an archived grant stays archived after other orgs churn through every pre-parsed slot', async () => {
    const book = new PolicyBook();
    const slots = 4;
    const authz = createAuthorizer({ projectRoleOf: async () => undefined, extraPolicies: book.textFor, policySetSlots: slots });
    const manageKeys = resourceOf('Org', ORG_X);

    book.set(ORG_X, [harmless, permitAll]);
    expect((await authz.check(viewer(ORG_X), 'manage-keys', manageKeys)).allowed, 'granted by the permit').to.equal(true);

    book.set(ORG_X, [harmless]);
    // Other orgs' sets take every other slot, so the org's current set lands in the slot its granting set held.
    for (let i = 1; i < slots; i += 1) {
      const other = `aaaaaaaa-aaaa-4aaa-8aaa-${String(i).padStart(12, '0')}`;
      book.set(other, [harmless, `// set ${i}`]);
      await authz.check(viewer(other), 'read', resourceOf('Workflow', other));
    }
    const after = await authz.check(viewer(ORG_X), 'manage-keys', manageKeys);
    expect(after.allowed, 'a viewer may not manage keys once the grant is archived').to.equal(false);
  });

  it('the reporter\'s case: 256 sets from another org do not bring back an archived grant', async () => {
    const book = new PolicyBook();
    const authz = createAuthorizer({ projectRoleOf: async () => undefined, extraPolicies: book.textFor });
    const other = orgs[1];
    book.set(ORG_X, [harmless, permitAll]);
    expect((await authz.check(viewer(ORG_X), 'manage-keys', resourceOf('Org', ORG_X))).allowed).to.equal(true);
    book.set(ORG_X, [harmless]);
    for (let i = 0; i < 255; i += 1) {
      book.set(other, [harmless, `// policy ${i}`]);
      await authz.check(viewer(other), 'read', resourceOf('Workflow', other));
    }
    expect((await authz.check(viewer(ORG_X), 'manage-keys', resourceOf('Org', ORG_X))).allowed).to.equal(false);
    expect((await authz.check(viewer(ORG_X), 'read', resourceOf('Workflow', ORG_X))).allowed).to.equal(true);
  });

  it('every decision equals a fresh Cedar evaluation of the org\'s active set (random create, update, archive across orgs)', async function () {
    // Each reference decision parses the whole policy set afresh: seconds of CPU on a quiet machine, more on a busy one.
    this.timeout(120_000);
    const command = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant('create' as const), org: fc.nat(orgs.length - 1), text: fc.nat(statementPool.length - 1) }), weight: 3 },
      { arbitrary: fc.record({ kind: fc.constant('update' as const), org: fc.nat(orgs.length - 1), pick: fc.nat(), text: fc.nat(statementPool.length - 1) }), weight: 2 },
      { arbitrary: fc.record({ kind: fc.constant('archive' as const), org: fc.nat(orgs.length - 1), pick: fc.nat() }), weight: 2 },
      { arbitrary: checkCommand, weight: 5 },
    );
    await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 20, maxLength: 120, size: 'max' }), async (commands) => {
      const store = new StoredPolicies();
      const authz = createAuthorizer({ projectRoleOf: async () => undefined, extraPolicies: store.textFor, policySetSlots: 3 });
      for (const c of commands) {
        if (c.kind === 'create') store.create(orgs[c.org]!, statementPool[c.text]!);
        else if (c.kind === 'update') store.update(orgs[c.org]!, c.pick, statementPool[c.text]!);
        else if (c.kind === 'archive') store.archive(orgs[c.org]!, c.pick);
        else await expectReferenceDecision(authz, store.textFor, c);
      }
    }), { numRuns: 40, endOnFailure: true });
  });

  it('a stored policy that names a user by id (however it is spaced) answers for that user only', async () => {
    const store = new StoredPolicies();
    const authz = createAuthorizer({ projectRoleOf: async () => undefined, extraPolicies: store.textFor });
    // Cedar reads `Troupe::User:: "…"` and `Troupe::User::\n"…"` as entity literals too; a decision memoised by
    // attributes alone would hand the named user's grant to every other viewer of the org.
    for (const spacing of [' ', '\n', '  \n  ']) {
      store.create(ORG_X, `permit (principal == Troupe::User::${spacing}"viewer-a", action == Troupe::Action::"manage-keys", resource);`);
      const named = await authz.check(userOf(ORG_X, 'viewer', 'a'), 'manage-keys', resourceOf('Org', ORG_X));
      const other = await authz.check(userOf(ORG_X, 'viewer', 'b'), 'manage-keys', resourceOf('Org', ORG_X));
      expect([named.allowed, other.allowed], JSON.stringify(spacing)).to.deep.equal([true, false]);
      store.archive(ORG_X, 0);
    }
  });

});
