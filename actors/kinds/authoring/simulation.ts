import * as cedar from '../../services/cedar/engine.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { CEDAR_NAMESPACE, cedarSchemaText } from '../../../schemas/cedar/index.js';
import { MAX_NODES } from '../../../schemas/workflows/definition.js';
import { loadDefaultPolicySet, splitPolicies } from '../../services/identity/authorizer.js';
import type { OrgPrincipal, ProjectRole } from '../../services/identity/principal.js';
import { enforcementText } from '../policy/cedar-text.js';
import type { CandidatePlan } from './plan.js';
import { nodeKindOf, toolOf, type Vocabulary } from './vocabulary.js';

/**
 * What-if of a canvas against one exact policy revision (spec 4.8 "simulate"): the default policy set joined with
 * that one stored revision (re-annotated exactly as enforcement does, so reasons read `org.policy/<id>/v<n>#<k>`),
 * asked once per node with the caller as principal and the node's action and resource from the vocabulary. Each
 * node is allowed only when Cedar allows with no evaluation error and every tool it names is in the palette; the
 * canvas is allowed only when every node is. Read-only: it reads nothing but its arguments and writes nothing.
 *
 * The policy set is parsed into one fixed WASM slot and every node evaluated in the same synchronous stretch, so a
 * concurrent simulation can never see another's set, and simulations never grow the WASM module's memory.
 */

export const MAX_SIMULATION_NODES = MAX_NODES;
/** Past this a simulation is refused rather than allowed to hold the event loop. */
export const SIMULATION_BUDGET_MS = 2_000;
const SET_ID = 'troupe-authoring-simulation';
const SCHEMA_ID = 'troupe-authoring-simulation-schema';

export interface NodeVerdict {
  readonly id: string;
  readonly nodeKey: string;
  readonly decision: 'allow' | 'deny';
  readonly reasons: readonly string[];
  readonly errors: readonly string[];
}

export interface SimulationResult {
  readonly decision: 'allow' | 'deny';
  readonly nodes: readonly NodeVerdict[];
}

export interface SimulationInput {
  readonly principal: OrgPrincipal;
  /** The caller's explicit role on the project, when it has one (refines a member's or viewer's access). */
  readonly projectRole: ProjectRole | undefined;
  readonly orgId: string;
  readonly projectId: string;
  readonly policy: { readonly id: string; readonly version: number; readonly cedarPolicy: string };
  readonly plan: CandidatePlan;
  readonly vocabulary: Vocabulary;
  readonly now?: () => number;
}

let schemaReady = false;

export function simulate(input: SimulationInput): SimulationResult {
  if (input.plan.nodes.length > MAX_SIMULATION_NODES) {
    throw new TroupeError('HTTP_BODY_TOO_LARGE', `plan has more than ${MAX_SIMULATION_NODES} nodes`, { field: 'plan.nodes', limit: MAX_SIMULATION_NODES });
  }
  const now = input.now ?? (() => performance.now());
  const startedAt = now();
  const setProblem = preparse(input.policy);
  const principal = principalEntity(input.principal, input.projectRole);
  const seen = new Set<string>();
  const nodes = input.plan.nodes.map((node): NodeVerdict => {
    if (now() - startedAt > SIMULATION_BUDGET_MS) {
      throw new TroupeError('VALIDATION_FAILED', `simulation exceeded its ${SIMULATION_BUDGET_MS} ms evaluation budget`, { field: 'plan.nodes' });
    }
    const verdict = (decision: 'allow' | 'deny', reasons: string[], errors: string[] = []): NodeVerdict => ({ id: node.id, nodeKey: node.nodeKey, decision, reasons, errors });
    if (seen.has(node.id)) return verdict('deny', [`node id '${node.id}' is used more than once`]);
    seen.add(node.id);
    const kind = nodeKindOf(input.vocabulary, node.nodeKey);
    if (!kind) return verdict('deny', [`unknown node: '${node.nodeKey}' is not in this project's vocabulary`]);
    const toolProblems = unmatchedTools(node.config.tools, input.vocabulary);
    if (setProblem) return verdict('deny', ['the policy revision could not be evaluated'], [setProblem]);
    const { action, resourceType } = kind.authorization;
    const answer = cedar.statefulIsAuthorized({
      principal: principal.uid,
      action: { type: `${CEDAR_NAMESPACE}::Action`, id: action },
      // The resource id is the node kind, so a policy can single one out: `resource == Troupe::Session::"agent"`.
      resource: { type: `${CEDAR_NAMESPACE}::${resourceType}`, id: node.nodeKey },
      context: {},
      preparsedSchemaName: SCHEMA_ID,
      validateRequest: true,
      preparsedPolicySetId: SET_ID,
      entities: [principal, { uid: { type: `${CEDAR_NAMESPACE}::${resourceType}`, id: node.nodeKey }, attrs: resourceAttrs(input, node.config), parents: [] }],
    });
    if (answer.type === 'failure') return verdict('deny', ['the request could not be evaluated'], answer.errors.map((e) => e.message));
    const { decision, diagnostics } = answer.response;
    const errors = diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`);
    if (errors.length > 0) return verdict('deny', ['a policy failed to evaluate; evaluation errors deny', ...diagnostics.reason], errors);
    if (decision !== 'allow') {
      return verdict('deny', diagnostics.reason.length > 0 ? [...diagnostics.reason] : [`no policy permits ${action} on ${resourceType} for this caller`]);
    }
    if (toolProblems.length > 0) return verdict('deny', toolProblems);
    return verdict('allow', [...diagnostics.reason]);
  });
  return { decision: nodes.length > 0 && nodes.every((n) => n.decision === 'allow') ? 'allow' : 'deny', nodes };
}

/** Parses defaults + the one revision into the simulation slot; a problem string when the revision cannot be used. */
function preparse(policy: SimulationInput['policy']): string | undefined {
  const defaults = loadDefaultPolicySet().policies;
  if (!schemaReady) {
    const schemaAnswer = cedar.preparseSchema(SCHEMA_ID, cedarSchemaText());
    if (schemaAnswer.type === 'failure') throw new TroupeError('INTERNAL', 'Cedar schema does not parse');
    schemaReady = true;
  }
  const revision = splitPolicies(enforcementText([policy]), 'org.');
  if (typeof revision === 'string') return `the policy revision does not parse: ${revision}`;
  const answer = cedar.preparsePolicySet(SET_ID, { staticPolicies: { ...defaults, ...revision } });
  if (answer.type === 'failure') return answer.errors.map((e) => e.message).join('; ');
  return undefined;
}

function principalEntity(p: OrgPrincipal, projectRole: ProjectRole | undefined): cedar.EntityJson & { uid: { type: string; id: string } } {
  const ns = CEDAR_NAMESPACE;
  switch (p.kind) {
    case 'user': {
      const attrs: Record<string, cedar.CedarValueJson> = { orgId: p.orgId, orgRole: p.orgRole };
      if (projectRole && (p.orgRole === 'member' || p.orgRole === 'viewer')) attrs.projectRole = projectRole;
      return { uid: { type: `${ns}::User`, id: p.userId }, attrs, parents: [] };
    }
    case 'apiKey': return { uid: { type: `${ns}::ApiKey`, id: p.keyId }, attrs: { orgId: p.orgId, scopes: [...p.scopes] }, parents: [] };
    case 'machine': return { uid: { type: `${ns}::Machine`, id: p.clientId }, attrs: { orgId: p.orgId, scopes: [...p.scopes] }, parents: [] };
    case 'runtime': return { uid: { type: `${ns}::Worker`, id: p.workerId }, attrs: { orgId: p.orgId, projectIds: [...p.projectIds], scopes: [...p.scopes] }, parents: [] };
  }
}

function resourceAttrs(input: SimulationInput, config: Readonly<Record<string, unknown>>): Record<string, cedar.CedarValueJson> {
  const attrs: Record<string, cedar.CedarValueJson> = { orgId: input.orgId, projectId: input.projectId };
  // An approval node's required role is what a gate would carry, so role-specific policies see it.
  const role = config.requiredRole;
  if (role === 'owner' || role === 'admin' || role === 'member') attrs.requiredRole = role;
  return attrs;
}

function unmatchedTools(tools: unknown, vocabulary: Vocabulary): string[] {
  if (tools === undefined) return [];
  if (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string')) return ['config.tools must be a list of palette references'];
  return (tools as string[]).filter((ref) => !toolOf(vocabulary, ref)).map((ref) => `tool '${ref.slice(0, 200)}' matches no resource of this project's palette`);
}
