/**
 * Invariant: an authorization decision is a function of the exact policy set active for the org now. Pre-parsed
 * policy sets live in a bounded number of reusable slots and decisions are memoised; neither may let a set an
 * org had earlier (or another org's set) answer for the org's current one.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import * as cedar from '../../../actors/cedar/engine.js';
import { createAuthorizer, loadDefaultPolicySet, splitPolicies, type Action } from '../../../actors/identity/authorizer.js';
import type { ResourceRef } from '../../../actors/identity/ports.js';
import type { OrgRole, Principal } from '../../../actors/identity/principal.js';
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

const viewer = (orgId: string): Principal => ({ kind: 'user', userId: `viewer-${orgId}`, orgId, orgRole: 'viewer', via: 'token' });
const userOf = (orgId: string, orgRole: OrgRole): Principal => ({ kind: 'user', userId: `${orgRole}-${orgId}`, orgId, orgRole, via: 'token' });
const keyOf = (orgId: string, scopes: string[]): Principal => ({ kind: 'apiKey', keyId: `key-${scopes.join('-')}`, orgId, scopes });
const resourceOf = (type: string, orgId: string): ResourceRef => ({ type, id: `${type}-1`, orgId });

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
    const principalArb = fc.oneof(
      fc.constantFrom<OrgRole>('admin', 'member', 'viewer').map((role) => ({ role })),
      fc.constantFrom('read', 'write').map((scope) => ({ scopes: [scope] })),
    );
    const command = fc.oneof(
      // create, update or archive: the org's active set becomes this subset of the pool (empty = all archived)
      fc.record({ kind: fc.constant('set' as const), org: fc.nat(orgs.length - 1), policies: fc.subarray([...policyPool.keys()]) }),
      fc.record({
        kind: fc.constant('check' as const), org: fc.nat(orgs.length - 1), acrossOrgs: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
        who: principalArb, action: fc.constantFrom(...checkedActions), resource: fc.constantFrom(...checkedResources),
      }),
    );
    await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 20, maxLength: 120, size: 'max' }), async (commands) => {
      const book = new PolicyBook();
      const authz = createAuthorizer({ projectRoleOf: async () => undefined, extraPolicies: book.textFor, policySetSlots: 3 });
      for (const c of commands) {
        if (c.kind === 'set') {
          book.set(orgs[c.org]!, c.policies.map((i) => policyPool[i]!));
          continue;
        }
        const orgId = orgs[c.org]!;
        const principal = 'role' in c.who ? userOf(orgId, c.who.role) : keyOf(orgId, c.who.scopes);
        const resource = resourceOf(c.resource, c.acrossOrgs ? orgs[(c.org + 1) % orgs.length]! : orgId);
        const got = await authz.check(principal, c.action, resource);
        const want = referenceDecision(await book.textFor(resource.orgId), principal, c.action, resource);
        expect(got.allowed, `${JSON.stringify(c)} with ${await book.textFor(resource.orgId)}`).to.equal(want);
      }
    }), { numRuns: 40, endOnFailure: true });
  });
});
