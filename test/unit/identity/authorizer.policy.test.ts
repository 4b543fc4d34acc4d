/**
 * Invariant: the default Cedar policy set grants each org role, project role, API-key scope and worker exactly
 * the actions CONTRACT.md "Roles" gives it, never anything across orgs, and any evaluation error denies.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { cedarSchemaText } from '../../../schemas/cedar/index.js';
import { defaultPolicyText } from '../../../schemas/cedar/index.js';
import { createAuthorizer, namesEntityById, splitPolicies, validatePolicies, type Action } from '../../../actors/services/identity/authorizer.js';
import type { ResourceRef } from '../../../actors/services/identity/ports.js';
import type { OrgRole, Principal, ProjectRole } from '../../../actors/services/identity/principal.js';

const ORG = '11111111-1111-4111-8111-111111111111';
const OTHER_ORG = '22222222-2222-4222-8222-222222222222';
const PROJECT = '33333333-3333-4333-8333-333333333333';
const OTHER_PROJECT = '44444444-4444-4444-8444-444444444444';

const user = (orgRole: OrgRole, orgId = ORG): Principal => ({ kind: 'user', userId: `u-${orgRole}`, orgId, orgRole, via: 'token' });
const apiKey = (scopes: string[]): Principal => ({ kind: 'apiKey', keyId: `k-${scopes.join('-')}`, orgId: ORG, scopes });
const worker = (projectIds: string[]): Principal => ({ kind: 'runtime', workerId: 'w1', orgId: ORG, projectIds, registrationId: 'r1', scopes: [] });

const res = (type: string, attrs?: Record<string, string>, projectId?: string): ResourceRef =>
  ({ type, id: `${type}-1`, orgId: ORG, ...(projectId ? { projectId } : {}), ...(attrs ? { attrs } : {}) });

/** [action, resource, roles allowed] — every org role not listed must be denied. */
const orgRoleTable: Array<[Action, ResourceRef, OrgRole[]]> = [
  ['read', res('Workflow'), ['owner', 'admin', 'member', 'viewer']],
  ['read', res('Audit'), ['owner', 'admin', 'member', 'viewer']],
  ['edit', res('Workflow'), ['owner', 'admin', 'member']],
  ['edit', res('AgentCard'), ['owner', 'admin', 'member']],
  ['edit', res('Template'), ['owner', 'admin']],
  ['edit', res('Project'), ['owner', 'admin']],
  ['publish', res('Workflow'), ['owner', 'admin']],
  ['dispatch', res('Session'), ['owner', 'admin', 'member']],
  ['operate', res('Session'), ['owner', 'admin', 'member']],
  ['decide', res('ApprovalGate'), ['owner', 'admin', 'member']],
  ['decide', res('ApprovalGate', { requiredRole: 'member' }), ['owner', 'admin', 'member']],
  ['decide', res('ApprovalGate', { requiredRole: 'admin' }), ['owner', 'admin']],
  ['decide', res('ApprovalGate', { requiredRole: 'owner' }), ['owner']],
  ['manage-keys', res('Org'), ['owner', 'admin']],
  ['manage-credentials', res('Credential'), ['owner', 'admin']],
  ['manage-policies', res('Policy'), ['owner', 'admin']],
  ['manage-org', res('Org'), ['owner', 'admin']],
  ['enqueue-mutation', res('DaemonHost'), ['owner', 'admin']],
  ['manage-members', res('Team'), ['owner', 'admin']],
  ['manage-members', res('Org', { targetRole: 'admin' }), ['owner', 'admin']],
  ['manage-members', res('Org', { targetRole: 'owner' }), ['owner']],
  ['report', res('Session'), ['owner', 'admin']],
];

describe('Cedar default policies', () => {
  const authz = createAuthorizer({ projectRoleOf: async (_o, userId, projectId) => projectRoles.get(`${userId}:${projectId}`) });
  const projectRoles = new Map<string, ProjectRole>();
  afterEach(() => projectRoles.clear());

  it('validate against the schema in strict mode', () => {
    const policies = splitPolicies(defaultPolicyText());
    expect(policies).to.be.an('object');
    expect(validatePolicies(cedarSchemaText(), policies as Record<string, string>)).to.deep.equal([]);
  });

  it('name no entity by id, so decisions under them may be memoised by attributes', () => {
    const policies = splitPolicies(defaultPolicyText());
    expect(policies).to.be.an('object');
    expect(namesEntityById(policies as Record<string, string>)).to.equal(false);
  });

  describe('org roles', () => {
    for (const [action, resource, allowed] of orgRoleTable) {
      for (const role of ['owner', 'admin', 'member', 'viewer'] as const) {
        const expected = allowed.includes(role);
        it(`${role} ${expected ? 'may' : 'may not'} ${action} ${resource.type}${resource.attrs ? ' ' + JSON.stringify(resource.attrs) : ''}`, async () => {
          const result = await authz.check(user(role), action, resource);
          expect(result.errors).to.deep.equal([]);
          expect(result.allowed).to.equal(expected);
          if (expected) expect(result.determiningPolicies).to.not.be.empty;
        });
      }
    }
  });

  describe('across orgs', () => {
    for (const [action, resource] of orgRoleTable) {
      it(`an owner of another org may not ${action} ${resource.type}`, async () => {
        const result = await authz.check(user('owner', OTHER_ORG), action, resource);
        expect(result.allowed).to.equal(false);
        expect(result.determiningPolicies).to.include('tenancy.cross-org');
      });
    }
    it('an admin-scoped API key of another org reads nothing', async () => {
      const key: Principal = { kind: 'apiKey', keyId: 'k', orgId: OTHER_ORG, scopes: ['admin'] };
      expect((await authz.check(key, 'read', res('Workflow'))).allowed).to.equal(false);
    });
  });

  describe('project roles refine member and viewer', () => {
    let authz = createAuthorizer({ projectRoleOf: async (_o, userId, projectId) => projectRoles.get(`${userId}:${projectId}`) });
    beforeEach(() => {
      authz = createAuthorizer({ projectRoleOf: async (_o, userId, projectId) => projectRoles.get(`${userId}:${projectId}`) });
    });
    const inProject = res('Workflow', undefined, PROJECT);
    it('a member who is project viewer only reads there', async () => {
      projectRoles.set(`u-member:${PROJECT}`, 'viewer');
      expect((await authz.check(user('member'), 'read', inProject)).allowed).to.equal(true);
      expect((await authz.check(user('member'), 'edit', inProject)).allowed).to.equal(false);
      expect((await authz.check(user('member'), 'dispatch', res('Session', undefined, PROJECT))).allowed).to.equal(false);
      // Elsewhere the org role still applies.
      expect((await authz.check(user('member'), 'edit', res('Workflow', undefined, OTHER_PROJECT))).allowed).to.equal(true);
    });
    it('a viewer who is project editor edits and dispatches there but does not publish', async () => {
      projectRoles.set(`u-viewer:${PROJECT}`, 'editor');
      expect((await authz.check(user('viewer'), 'edit', inProject)).allowed).to.equal(true);
      expect((await authz.check(user('viewer'), 'dispatch', res('Session', undefined, PROJECT))).allowed).to.equal(true);
      expect((await authz.check(user('viewer'), 'publish', inProject)).allowed).to.equal(false);
      expect((await authz.check(user('viewer'), 'edit', res('Workflow', undefined, OTHER_PROJECT))).allowed).to.equal(false);
    });
    it('a member who is project admin publishes and decides admin gates there, not owner gates', async () => {
      projectRoles.set(`u-member:${PROJECT}`, 'admin');
      expect((await authz.check(user('member'), 'publish', inProject)).allowed).to.equal(true);
      expect((await authz.check(user('member'), 'decide', res('ApprovalGate', { requiredRole: 'admin' }, PROJECT))).allowed).to.equal(true);
      expect((await authz.check(user('member'), 'decide', res('ApprovalGate', { requiredRole: 'owner' }, PROJECT))).allowed).to.equal(false);
      expect((await authz.check(user('member'), 'manage-keys', res('Org'))).allowed).to.equal(false);
    });
    it('an org admin keeps full access in a project where they hold a lower project role', async () => {
      projectRoles.set(`u-admin:${PROJECT}`, 'viewer');
      expect((await authz.check(user('admin'), 'publish', inProject)).allowed).to.equal(true);
    });
  });

  describe('API keys by scope', () => {
    const cases: Array<[string[], Action, ResourceRef, boolean]> = [
      [['read'], 'read', res('Workflow'), true],
      [['read'], 'edit', res('Workflow'), false],
      [['read'], 'dispatch', res('Session'), false],
      [['write'], 'edit', res('Workflow'), true],
      [['write'], 'dispatch', res('Session'), true],
      [['write'], 'edit', res('Template'), false],
      [['write'], 'publish', res('Workflow'), false],
      [['write'], 'manage-keys', res('Org'), false],
      [['admin'], 'publish', res('Workflow'), true],
      [['admin'], 'manage-keys', res('Org'), true],
      [['admin'], 'enqueue-mutation', res('DaemonHost'), true],
      [['admin'], 'read', res('Workflow'), true],
      [['admin'], 'decide', res('ApprovalGate'), false],
      [['admin'], 'manage-members', res('Org', { targetRole: 'owner' }), false],
      [[], 'read', res('Workflow'), false],
      [['agent-dispatch'], 'read', res('Workflow'), false],
    ];
    for (const [scopes, action, resource, expected] of cases) {
      it(`scopes [${scopes.join(',')}] ${expected ? 'may' : 'may not'} ${action} ${resource.type}`, async () => {
        expect((await authz.check(apiKey(scopes), action, resource)).allowed).to.equal(expected);
      });
    }
  });

  describe('workers', () => {
    it('read and report within their projects only', async () => {
      const w = worker([PROJECT]);
      expect((await authz.check(w, 'report', res('Session', undefined, PROJECT))).allowed).to.equal(true);
      expect((await authz.check(w, 'read', res('Session', undefined, PROJECT))).allowed).to.equal(true);
      expect((await authz.check(w, 'report', res('Session', undefined, OTHER_PROJECT))).allowed).to.equal(false);
      expect((await authz.check(w, 'edit', res('Workflow', undefined, PROJECT))).allowed).to.equal(false);
    });
  });

  describe('fails closed', () => {
    it('an unknown action, resource type or attribute denies with an error', async () => {
      for (const [action, resource] of [['fly', res('Workflow')], ['read', res('Spaceship')], ['read', res('Workflow', { colour: 'red' })]] as const) {
        const result = await authz.check(user('owner'), action, resource);
        expect(result.allowed).to.equal(false);
        expect(result.errors).to.have.length(1);
      }
    });
    it('the platform admin is not an org principal', async () => {
      expect((await authz.check({ kind: 'admin' }, 'read', res('Workflow'))).allowed).to.equal(false);
    });
    it('a policy that errors during evaluation denies although another permits', async () => {
      const erring = createAuthorizer({
        projectRoleOf: async () => undefined,
        extraPolicies: async () => '@id("needs-project") permit (principal, action, resource) when { resource.projectId == "x" };',
      });
      const result = await erring.check(user('owner'), 'read', res('Workflow'));
      expect(result.allowed).to.equal(false);
      expect(result.errors.join()).to.contain('org.needs-project');
      // With a projectId present the same policy evaluates cleanly and the owner is allowed again.
      expect((await erring.check(user('owner'), 'read', res('Workflow', undefined, PROJECT))).allowed).to.equal(true);
    });
    it('org policies that do not parse deny everything in that org', async () => {
      const broken = createAuthorizer({ projectRoleOf: async () => undefined, extraPolicies: async () => 'permit (principal' });
      const result = await broken.check(user('owner'), 'read', res('Workflow'));
      expect(result.allowed).to.equal(false);
      expect(result.errors).to.not.be.empty;
    });
    it('org policies that cannot be read because storage is down refuse with a retryable 503, not a 403 (issue 20)', async () => {
      const down = createAuthorizer({
        projectRoleOf: async () => undefined,
        extraPolicies: async () => { throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }); },
      });
      const refusal = await down.authorize(user('owner'), 'read', res('Workflow')).then(() => undefined, (err: unknown) => err);
      expect(refusal).to.include({ code: 'STORAGE_UNAVAILABLE', status: 503 });
      const failing = createAuthorizer({ projectRoleOf: async () => undefined, extraPolicies: async () => { throw new Error('a bug'); } });
      expect((await failing.check(user('owner'), 'read', res('Workflow'))).allowed, 'anything else still denies').to.equal(false);
    });
    it('org policies add forbids but cannot lift the cross-org forbid', async () => {
      const extra = createAuthorizer({
        projectRoleOf: async () => undefined,
        extraPolicies: async () => `@id("no-publish") forbid (principal, action == Troupe::Action::"publish", resource);
          @id("open-all") permit (principal, action, resource);`,
      });
      const publish = await extra.check(user('owner'), 'publish', res('Workflow'));
      expect(publish.allowed).to.equal(false);
      expect(publish.determiningPolicies).to.deep.equal(['org.no-publish']);
      expect((await extra.check(user('owner', OTHER_ORG), 'read', res('Workflow'))).allowed).to.equal(false);
    });
    it('authorize throws AUTHZ_DENIED when denied', async () => {
      try {
        await authz.authorize(user('viewer'), 'edit', res('Workflow'));
        expect.fail('should have thrown');
      } catch (err) {
        expect((err as { code?: string }).code).to.equal('AUTHZ_DENIED');
      }
    });
  });

  describe('platform rule: owners keep their policies (issue 16)', () => {
    const lockout = '@id("no-owners")\nforbid (principal is Troupe::User, action, resource) when { principal.orgRole == "owner" };';
    const recorded: Array<{ action: string; resource: string; refusedBy: readonly string[] }> = [];
    let failRecording = false;
    const locked = createAuthorizer({
      projectRoleOf: async () => undefined,
      extraPolicies: async (orgId) => (orgId === ORG ? lockout : ''),
      onBreakGlass: async (_p, action, resource, result) => {
        if (failRecording) throw new Error('audit is down');
        recorded.push({ action, resource: resource.type, refusedBy: result.determiningPolicies });
      },
    });

    it('lets an owner read and manage the org\'s policies whatever the org\'s policies say, and nothing else', async () => {
      for (const action of ['read', 'manage-policies'] as const) {
        const result = await locked.check(user('owner'), action, res('Policy'));
        expect(result, action).to.deep.include({ allowed: true, breakGlass: true });
        expect(result.determiningPolicies).to.deep.equal(['platform.owner-keeps-policies', 'org.no-owners']);
      }
      expect((await locked.check(user('owner'), 'read', res('Audit'))).allowed, 'other resources stay forbidden').to.equal(false);
      expect((await locked.check(user('owner'), 'edit', res('Policy'))).allowed, 'other actions stay forbidden').to.equal(false);
      expect((await locked.check(user('admin'), 'manage-policies', res('Policy'))).allowed, 'admins have no such rule').to.equal(true);
      expect((await locked.check(user('owner', OTHER_ORG), 'read', res('Policy'))).allowed, 'never across orgs').to.equal(false);
      const plain = await authz.check(user('owner'), 'manage-policies', res('Policy'));
      expect(plain.breakGlass, 'no break-glass where the org\'s policies allow').to.equal(undefined);
    });

    it('authorize records each break-glass before it returns, and refuses when it cannot record', async () => {
      recorded.length = 0;
      await locked.authorize(user('owner'), 'manage-policies', res('Policy'));
      expect(recorded).to.deep.equal([{ action: 'manage-policies', resource: 'Policy', refusedBy: ['platform.owner-keeps-policies', 'org.no-owners'] }]);
      failRecording = true;
      try {
        await locked.authorize(user('owner'), 'read', res('Policy'));
        expect.fail('should have thrown');
      } catch (err) {
        expect((err as Error).message).to.equal('audit is down');
      } finally {
        failRecording = false;
      }
    });
  });

  it('memoises a decision by attributes: the same request does not cross into WASM again, and stays correct', async () => {
    const fresh = createAuthorizer({ projectRoleOf: async () => undefined });
    const evaluate = sinon.spy(fresh as unknown as { evaluate: (...args: unknown[]) => unknown }, 'evaluate');
    const r = res('Workflow', undefined, PROJECT);
    const first = await fresh.check(user('member'), 'edit', r);
    const again = await fresh.check(user('member'), 'edit', r);
    expect(first.allowed).to.equal(true);
    expect(again).to.deep.equal(first);
    expect(evaluate.callCount).to.equal(1);
    // Another role or another org is another key, evaluated afresh.
    expect((await fresh.check(user('viewer'), 'edit', r)).allowed).to.equal(false);
    expect((await fresh.check(user('member', OTHER_ORG), 'edit', r)).allowed).to.equal(false);
    expect(evaluate.callCount).to.equal(3);
  });
});
