import { createHash } from 'node:crypto';
import * as cedar from '../cedar/engine.js';
import type { Clock } from '../../../ops/kernel/clock.js';
import { systemClock } from '../../../ops/kernel/clock.js';
import type { Logger } from '../../../ops/kernel/logger.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { toStorageError } from '../../../storage/storage-errors.js';
import type { Transport, Unsubscribe } from '../../../transport/port.js';
import { CEDAR_NAMESPACE, cedarSchemaText, defaultPolicyText } from '../../../schemas/cedar/index.js';
import type { AuthorizationResult, Authorizer, ResourceRef } from './ports.js';
import { orgRoles, type Principal, type ProjectRole } from './principal.js';
import { RevocableMemo } from './memo.js';
import { REVOCATION_TOPIC, parseRevocation, tags as revocationTag } from './revocation.js';

/**
 * Authorization on Cedar (cedar-wasm), against `schemas/cedar/troupe.cedarschema` and the default policy set
 * `schemas/cedar/default.cedar`, joined per org with any stored policies (`extraPolicies`).
 *
 * Fail closed: a Cedar `failure` (malformed request, entity not matching the schema, unknown action or resource
 * type) and any evaluation error reported in the diagnostics both deny, whatever the decision says. Policy sets
 * are parsed once and kept pre-parsed inside the WASM module (`preparsePolicySet`), so a decision costs one
 * evaluation, not a parse.
 */

export const actions = [
  'read', 'edit', 'publish', 'dispatch', 'operate', 'decide', 'report',
  'manage-keys', 'manage-members', 'manage-credentials', 'manage-policies', 'manage-org', 'enqueue-mutation',
  // An agent's tool use in a session, which policy may allow without asking a person (decision 0088).
  'agent-tool',
] as const;
export type Action = (typeof actions)[number];

export const resourceTypes = [
  'Org', 'Project', 'Workflow', 'WorkflowRun', 'Session', 'Policy', 'ApprovalGate', 'Team', 'Credential', 'Integration',
  'DaemonHost', 'Mutation', 'Incident', 'Template', 'AgentCard', 'Proposal', 'Requester', 'Audit', 'Registration', 'Repository',
  'AgentTool',
] as const;
export type ResourceType = (typeof resourceTypes)[number];

/** Resource attributes the schema declares beyond orgId/projectId; both name an org role. */
const roleAttributes = new Set(['requiredRole', 'targetRole']);

export interface AuthorizerOptions {
  /** The caller's explicit role on a project, if any (normally `projectRoleOf` from storage/identity/orgs.ts). */
  readonly projectRoleOf: (orgId: string, userId: string, projectId: string) => Promise<ProjectRole | undefined>;
  /** Cedar text of an org's own policies, joined to the defaults. @default none */
  readonly extraPolicies?: (orgId: string, projectId?: string) => Promise<string>;
  /** Subscribed to `identity.revoked` so project-role changes apply at once on every node. */
  readonly transport?: Transport;
  readonly clock?: Clock;
  readonly log?: Logger;
  /** Distinct per-org policy sets kept pre-parsed at once (tests use a few to reach slot reuse). @default 256 */
  readonly policySetSlots?: number;
  /** How long a project-role lookup is reused. @default 30000 */
  readonly projectRoleTtlMs?: number;
  /**
   * Told of every refusal `authorize` is about to throw (not of `check` answers, which callers may use to filter).
   * Must return at once and never throw into the request: the node's hook only buffers (decision 0009).
   */
  readonly onDenied?: (principal: Principal, action: string, resource: ResourceRef, result: AuthorizationResult) => void;
  /**
   * Records a break-glass allowance (see `platformRules`) durably; `authorize` waits for it and refuses with the
   * recorder's error if it fails, so no break-glass use goes unrecorded. @default none (nothing to record to)
   */
  readonly onBreakGlass?: (principal: Principal, action: string, resource: ResourceRef, deniedBy: AuthorizationResult) => Promise<void>;
}

/**
 * Platform rules come before the org's policies and no org policy can take them away. Org policies may refuse
 * anything, including to owners; without this an admin's `forbid` on owners would lock the org out of its own
 * policies for good, with nothing in the org API to undo it. An owner keeps `read` and `manage-policies` on the
 * org's policies; when the org's policies refused, the allowance is a break-glass and audited.
 */
const OWNER_POLICY_ACCESS = 'platform.owner-keeps-policies';
function platformRuleFor(principal: Principal, action: string, resource: ResourceRef): string | undefined {
  if (principal.kind !== 'user' || principal.orgRole !== 'owner' || principal.orgId !== resource.orgId) return undefined;
  if (resource.type === 'Policy' && (action === 'read' || action === 'manage-policies')) return OWNER_POLICY_ACCESS;
  return undefined;
}

export interface CedarAuthorizer extends Authorizer {
  readonly ready: Promise<void>;
  /** Drops memoised project roles carrying any of these revocation tags. */
  invalidate(tags: readonly string[]): void;
  close(): Promise<void>;
}

const SCHEMA_ID = 'troupe-authz-schema';
const DEFAULT_SET_ID = 'troupe-authz-default';
/** Distinct per-org policy sets kept pre-parsed at once; beyond this the least recently added slot is reused. */
const EXTRA_SET_SLOTS = 256;

export function createAuthorizer(options: AuthorizerOptions): CedarAuthorizer {
  return new PolicyAuthorizer(options);
}

interface PolicyVerdict {
  /** Where the set is pre-parsed inside the WASM module: a slot, reused once all are taken. */
  readonly setId: string;
  /** What the set is: its text's SHA-256. Decisions are memoised under this, never under the reused slot. */
  readonly digest: string;
  readonly errors: readonly string[];
  /** True when no policy names an entity by id, so a decision depends on attributes only and can be memoised. */
  readonly idFree: boolean;
}

/**
 * A Cedar evaluation through the WASM boundary costs tens to hundreds of µs, mostly entity conversion. When no
 * policy names an entity by id (the defaults never do), the decision is a pure function of the request's types
 * and attributes, so it is memoised under exactly those and the digest of the policy set's text. Never under the set's
 * slot: a slot is reused for another set once all are taken, and an org's earlier set must not answer for its current one.
 */
const DECISION_MEMO_ENTRIES = 10_000;

/**
 * Whether any statement names an entity other than an action by its id (`principal == Troupe::User::"u"`, a resource
 * `in` a list, an entity literal in a condition). Read from Cedar's own parse, not the text: Cedar takes
 * `Troupe::User:: "u"` and `Troupe::User::<newline>"u"` as literals too, which a pattern over the text missed, and
 * a decision memoised by attributes would then answer for every other user of the same role. An action named by id
 * is harmless: the action is part of the memo key.
 */
export function namesEntityById(policies: Readonly<Record<string, string>>): boolean {
  for (const text of Object.values(policies)) {
    const answer = cedar.policyToJson(text);
    // What Cedar cannot turn into JSON is assumed to name an entity: the memo is an optimisation, never a risk.
    if (answer.type === 'failure' || holdsEntityLiteral(answer.json)) return true;
  }
  return false;
}

function holdsEntityLiteral(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(holdsEntityLiteral);
  if (node === null || typeof node !== 'object') return false;
  const record = node as Record<string, unknown>;
  // An entity reference is `{type, id}` (alone or under `__entity`); record literals wrap their members as expressions.
  if (typeof record.type === 'string' && typeof record.id === 'string') return !record.type.endsWith('::Action');
  return Object.values(record).some(holdsEntityLiteral);
}

class PolicyAuthorizer implements CedarAuthorizer {
  readonly ready: Promise<void>;
  private readonly extraSets = new Map<string, PolicyVerdict>();
  private readonly decisions = new Map<string, AuthorizationResult>();
  private nextSlot = 0;
  private readonly slots: number;
  private readonly roles: RevocableMemo<ProjectRole | null>;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly projectRoleTtlMs: number;
  private unsubscribe: Unsubscribe | undefined;

  constructor(private readonly options: AuthorizerOptions) {
    this.clock = options.clock ?? systemClock;
    this.log = options.log ?? silentLogger();
    this.projectRoleTtlMs = options.projectRoleTtlMs ?? 30_000;
    this.slots = options.policySetSlots ?? EXTRA_SET_SLOTS;
    this.roles = new RevocableMemo(10_000, 10_000);
    this.ready = options.transport
      ? options.transport.subscribe(REVOCATION_TOPIC, (_t, event) => {
        const tags = parseRevocation(event);
        if (tags) this.roles.revoke(tags);
      }).then((u) => { this.unsubscribe = u; })
      : Promise.resolve();
    this.ready.catch((err: unknown) => this.log.error({ err }, 'authorizer revocation subscription failed'));
  }

  async authorize(principal: Principal, action: string, resource: ResourceRef): Promise<AuthorizationResult> {
    const result = await this.check(principal, action, resource);
    if (result.breakGlass && this.options.onBreakGlass) {
      await this.options.onBreakGlass(principal, action, resource, result);
    }
    if (!result.allowed) {
      try {
        this.options.onDenied?.(principal, action, resource, result);
      } catch (err) {
        this.log.warn({ err }, 'recording an authorization denial failed');
      }
      throw new TroupeError('AUTHZ_DENIED', `not allowed to ${action} this ${resource.type}`, { action, resourceType: resource.type });
    }
    return result;
  }

  async check(principal: Principal, action: string, resource: ResourceRef): Promise<AuthorizationResult> {
    const result = await this.checkPolicies(principal, action, resource);
    if (result.allowed) return result;
    const rule = platformRuleFor(principal, action, resource);
    if (rule === undefined) return result;
    // What the org's policies said stays in the answer, so the audit entry names the refusing policies.
    return { allowed: true, determiningPolicies: [rule, ...result.determiningPolicies], errors: result.errors, breakGlass: true };
  }

  private async checkPolicies(principal: Principal, action: string, resource: ResourceRef): Promise<AuthorizationResult> {
    if (principal.kind === 'admin') return deny('the platform admin is not an org principal');
    if (!(actions as readonly string[]).includes(action)) return deny(`unknown action "${action}"`);
    if (!(resourceTypes as readonly string[]).includes(resource.type)) return deny(`unknown resource type "${resource.type}"`);
    const resourceAttrs = resourceAttributes(resource);
    if (typeof resourceAttrs === 'string') return deny(resourceAttrs);
    // The engine and the shipped policies load with the first decision, not with the node (decision 0057): an idle
    // node keeps none of it resident. A broken shipped file fails this decision loudly (the policy unit test
    // validates both files strictly, so none ships).
    loadDefaultPolicySet();

    const [extra, principalEntity] = await Promise.all([
      this.extraPolicyText(resource.orgId, resource.projectId),
      this.principalEntity(principal, resource),
    ]);
    if (extra === undefined) return deny('org policies could not be loaded');
    // Nothing below awaits: the slot resolved here is the one evaluated, whatever other checks do to the slots.
    const policySet = this.policySetOf(extra);
    if (policySet.errors.length > 0) return deny(...policySet.errors);

    const memoKey = policySet.idFree
      ? JSON.stringify([policySet.digest, principalEntity.uid.type, principalEntity.attrs, action, resource.type, resourceAttrs])
      : undefined;
    const memoised = memoKey === undefined ? undefined : this.decisions.get(memoKey);
    if (memoised) return memoised;
    const result = this.evaluate(policySet.setId, principalEntity, action, resource, resourceAttrs);
    if (memoKey !== undefined) {
      this.decisions.set(memoKey, result);
      if (this.decisions.size > DECISION_MEMO_ENTRIES) this.decisions.delete(this.decisions.keys().next().value as string);
    }
    return result;
  }

  private evaluate(
    setId: string, principalEntity: cedar.EntityJson & { uid: { type: string; id: string } }, action: string,
    resource: ResourceRef, resourceAttrs: Record<string, cedar.CedarValueJson>,
  ): AuthorizationResult {
    const answer = cedar.statefulIsAuthorized({
      principal: principalEntity.uid,
      action: { type: `${CEDAR_NAMESPACE}::Action`, id: action },
      resource: { type: `${CEDAR_NAMESPACE}::${resource.type}`, id: resource.id },
      context: {},
      preparsedSchemaName: SCHEMA_ID,
      validateRequest: true,
      preparsedPolicySetId: setId,
      entities: [
        principalEntity,
        { uid: { type: `${CEDAR_NAMESPACE}::${resource.type}`, id: resource.id }, attrs: resourceAttrs, parents: [] },
      ],
    });
    if (answer.type === 'failure') return deny(...answer.errors.map((e) => e.message));
    const { decision, diagnostics } = answer.response;
    const errors = diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`);
    return { allowed: decision === 'allow' && errors.length === 0, determiningPolicies: diagnostics.reason, errors };
  }

  invalidate(tags: readonly string[]): void {
    this.roles.revoke(tags);
  }

  async close(): Promise<void> {
    await this.ready.catch(() => undefined);
    await this.unsubscribe?.();
  }

  private async principalEntity(p: Exclude<Principal, { kind: 'admin' }>, resource: ResourceRef): Promise<cedar.EntityJson & { uid: { type: string; id: string } }> {
    const ns = CEDAR_NAMESPACE;
    switch (p.kind) {
      case 'user': {
        const attrs: Record<string, cedar.CedarValueJson> = { orgId: p.orgId, orgRole: p.orgRole };
        // Project roles refine a member's or viewer's access; admins and owners keep theirs in every project.
        if (resource.projectId !== undefined && resource.orgId === p.orgId && (p.orgRole === 'member' || p.orgRole === 'viewer')) {
          const role = await this.projectRole(p.orgId, p.userId, resource.projectId);
          if (role) attrs.projectRole = role;
        }
        return { uid: { type: `${ns}::User`, id: p.userId }, attrs, parents: [] };
      }
      case 'apiKey':
        return { uid: { type: `${ns}::ApiKey`, id: p.keyId }, attrs: { orgId: p.orgId, scopes: [...p.scopes] }, parents: [] };
      case 'machine':
        return { uid: { type: `${ns}::Machine`, id: p.clientId }, attrs: { orgId: p.orgId, scopes: [...p.scopes] }, parents: [] };
      case 'runtime':
        return {
          uid: { type: `${ns}::Worker`, id: p.workerId },
          attrs: { orgId: p.orgId, projectIds: [...p.projectIds], scopes: [...p.scopes] },
          parents: [],
        };
    }
  }

  private async projectRole(orgId: string, userId: string, projectId: string): Promise<ProjectRole | undefined> {
    const key = `${orgId}:${userId}:${projectId}`;
    const now = this.clock.now();
    const hit = this.roles.get(key, now);
    if (hit !== undefined) return hit ?? undefined;
    const startedAt = this.roles.begin();
    const role = await this.options.projectRoleOf(orgId, userId, projectId);
    this.roles.set(key, role ?? null, now + this.projectRoleTtlMs,
      [revocationTag.member(orgId, userId), revocationTag.user(userId), revocationTag.org(orgId)], startedAt);
    return role;
  }

  /** The org's stored policy text, '' for none; undefined when it could not be loaded (the caller denies). */
  private async extraPolicyText(orgId: string, projectId: string | undefined): Promise<string | undefined> {
    if (!this.options.extraPolicies) return '';
    try {
      return await this.options.extraPolicies(orgId, projectId);
    } catch (err) {
      // Storage that is down denies too, but says so: a 503 the caller retries, not a 403 it believes.
      const storage = toStorageError(err);
      if (storage instanceof TroupeError && storage.code === 'STORAGE_UNAVAILABLE') throw storage;
      this.log.error({ err, orgId }, 'could not load org policies; denying');
      return undefined;
    }
  }

  private policySetOf(extra: string): PolicyVerdict {
    if (extra.trim() === '') return defaultVerdict;
    const digest = createHash('sha256').update(extra).digest('hex');
    const cached = this.extraSets.get(digest);
    if (cached) return cached;
    const verdict = this.preparseExtra(extra, digest);
    this.extraSets.set(digest, verdict);
    return verdict;
  }

  /** Joins an org's policies to the defaults under ids prefixed `org.`, so they can never replace a default. */
  private preparseExtra(extra: string, digest: string): PolicyVerdict {
    const parts = splitPolicies(extra, 'org.');
    if (typeof parts === 'string') return { ...defaultVerdict, digest, errors: [`org policies do not parse: ${parts}`] };
    const slot = this.nextSlot;
    this.nextSlot = (this.nextSlot + 1) % this.slots;
    const setId = `troupe-authz-extra-${slot}`;
    // The slot is being reused: forget whichever digest pointed at it.
    for (const [digest, verdict] of this.extraSets) if (verdict.setId === setId) this.extraSets.delete(digest);
    const answer = cedar.preparsePolicySet(setId, { staticPolicies: { ...loadDefaultPolicySet().policies, ...parts } });
    if (answer.type === 'failure') return { ...defaultVerdict, digest, errors: answer.errors.map((e) => e.message) };
    return { setId, digest, errors: [], idFree: !namesEntityById(parts) };
  }
}

const defaultVerdict: PolicyVerdict = { setId: DEFAULT_SET_ID, digest: 'default', errors: [], idFree: true };

const deny = (...errors: string[]): AuthorizationResult => ({ allowed: false, determiningPolicies: [], errors });

function resourceAttributes(resource: ResourceRef): Record<string, cedar.CedarValueJson> | string {
  const attrs: Record<string, cedar.CedarValueJson> = { orgId: resource.orgId };
  if (resource.projectId !== undefined) attrs.projectId = resource.projectId;
  for (const [name, value] of Object.entries(resource.attrs ?? {})) {
    if (!roleAttributes.has(name)) return `unknown resource attribute "${name}"`;
    if (typeof value !== 'string' || !(orgRoles as readonly string[]).includes(value)) return `${name} must be an org role`;
    attrs[name] = value;
  }
  return attrs;
}

/** Splits Cedar text into `{id: policy}` using each policy's `@id("…")`, or a generated id; a string is an error. */
export function splitPolicies(text: string, idPrefix = ''): Record<string, string> | string {
  const parts = cedar.policySetTextToParts(text);
  if (parts.type === 'failure') return parts.errors.map((e) => e.message).join('; ');
  if (parts.policy_templates.length > 0) return 'policy templates are not supported here';
  const out: Record<string, string> = {};
  parts.policies.forEach((policy, index) => {
    const annotated = /@id\("([^"\\]{1,200})"\)/.exec(policy)?.[1];
    let id = `${idPrefix}${annotated ?? `policy${index}`}`;
    while (out[id] !== undefined) id = `${id}'`;
    out[id] = policy;
  });
  return out;
}

let bootedDefaults: { policies: Record<string, string> } | undefined;

/**
 * Parses the schema and default policies, validates the policies against the schema (strict mode), and
 * pre-parses both. Throws at boot if anything is off: a node must never run with a policy set it cannot trust.
 */
export function loadDefaultPolicySet(): { policies: Record<string, string> } {
  if (bootedDefaults) return bootedDefaults;
  const schema = cedarSchemaText();
  const text = defaultPolicyText();
  const policies = splitPolicies(text);
  if (typeof policies === 'string') throw new Error(`default Cedar policies do not parse: ${policies}`);
  // Strict validation of the shipped policies against the shipped schema took a third of a second of every start
  // (decision 0043), and asking Cedar whether they name an entity by id (they must not: decisions under them are
  // memoised by attributes) another eighth (decision 0051); both are files of this repository, so the policy unit
  // test checks both instead.
  const schemaAnswer = cedar.preparseSchema(SCHEMA_ID, schema);
  if (schemaAnswer.type === 'failure') throw new Error(`Cedar schema does not parse: ${schemaAnswer.errors.map((e) => e.message).join('; ')}`);
  const setAnswer = cedar.preparsePolicySet(DEFAULT_SET_ID, { staticPolicies: policies });
  if (setAnswer.type === 'failure') throw new Error(`default Cedar policies do not parse: ${setAnswer.errors.map((e) => e.message).join('; ')}`);
  bootedDefaults = { policies };
  return bootedDefaults;
}

/** Strict validation of a policy set against the schema; empty when valid. */
export function validatePolicies(schema: string, policies: Record<string, string>): string[] {
  const answer = cedar.validate({ schema, policies: { staticPolicies: policies }, validationSettings: { mode: 'strict' } });
  if (answer.type === 'failure') return answer.errors.map((e) => e.message);
  return answer.validationErrors.map((e) => `${e.policyId}: ${e.error.message}`);
}
