import { createHash } from 'node:crypto';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { createRequire } from 'node:module';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { canonicalJson } from '../../../ops/kernel/canonical-json.js';
import { parseExpression } from '../workflow-run/expression.js';
import { triggerOf, type Trigger } from './trigger.js';
import {
  definitionV11Schema, definitionV2Schema, MAX_DEFINITION_BYTES, MAX_NODES, type DefinitionVersion,
} from '../../../schemas/workflows/definition.js';

/**
 * Parsing and checking a workflow definition, and compiling it into the plan a run walks. Pure: the same YAML text
 * always gives the same plan or the same first error. A run stores its plan in its own state, which is what pins
 * it to the version it started on (ops/decisions/0008-workflow-versions-and-runs.md).
 */

export type PlanNode =
  | {
      readonly id: string; readonly kind: 'agent'; readonly prompt: string; readonly provider?: string; readonly workType?: string; readonly agentCardId?: string;
      /** A repository of the run's project (id, name or URL) and the ref to start from (decision 0075). */
      readonly repository?: string; readonly ref?: string;
      /** 0–9, higher offered first (decision 0081); 5 when absent. */
      readonly priority?: number;
    }
  | {
      readonly id: string; readonly kind: 'approval'; readonly title: string; readonly requiredRole?: 'owner' | 'admin' | 'member';
      /** What an escalate decision does besides resuming the run: `live-session` opens a session the approver drives (decision 0069). */
      readonly onEscalate?: 'live-session';
      /** What that live session is asked; the title when absent. */
      readonly prompt?: string;
      /** The older spelling of `onEscalate`, still in stored definitions and the plans of their runs. */
      readonly escalation?: 'live-session';
    }
  | { readonly id: string; readonly kind: 'condition'; readonly when: string }
  | { readonly id: string; readonly kind: 'loop'; readonly maxIterations: number }
  | { readonly id: string; readonly kind: 'wait'; readonly seconds: number };

/**
 * A node as a definition writes it: the plan's kinds plus `plugin`, which is compiled away (`compileNode`). A plugin
 * verb runs as an agent session told which verb to run with which options, so the run machine, its steps and its
 * dispatch stay the five kinds it knows; the session's `workType` is `plugin` so routing can tell plugin work apart.
 */
export type DefinitionNode =
  | PlanNode
  | { readonly id: string; readonly kind: 'plugin'; readonly verb: string; readonly options?: Record<string, unknown>; readonly prompt?: string; readonly provider?: string; readonly agentCardId?: string };

export interface PlanEdge { readonly source: string; readonly target: string; readonly when?: boolean }

export interface Plan {
  readonly name: string;
  /** The first node; a run starts here. Absent for an empty workflow (its runs complete at once). */
  readonly start?: string;
  readonly nodes: readonly PlanNode[];
  readonly edges: readonly PlanEdge[];
  /** A webhook trigger's `priority`: what a run the trigger started gives agent nodes that set none (decision 0085). */
  readonly webhookPriority?: number;
}

export interface AnalysedDefinition {
  readonly definitionVersion: DefinitionVersion;
  readonly schemaHash: string;
  /** The definition's trigger as written (what `triggerConfig` defaults to). */
  readonly trigger: Record<string, unknown>;
  /** The same trigger, checked and with its defaults filled in: what the execution layer deploys. */
  readonly deployedTrigger: Trigger;
  readonly providers: readonly string[];
  readonly config: Record<string, unknown>;
  readonly plan: Plan;
}

export { MAX_DEFINITION_BYTES } from '../../../schemas/workflows/definition.js';

// The YAML parser is loaded with the first definition too (a synchronous require, as analysis is synchronous): a node
// that never reads a workflow definition never pays for it (decision 0051).
let yaml: typeof import('yaml') | undefined;
const yamlOnFirstUse = (): typeof import('yaml') => (yaml ??= createRequire(import.meta.url)('yaml') as typeof import('yaml'));

// Compiled when the first definition is analysed, not when the module loads: both schemas are large, and compiling
// them (with this instance's own meta-schema) was a tenth of a node's start-up CPU (decision 0051).
let validators: Record<'v1.1' | 'v2', ValidateFunction> | undefined;
function validatorsOnFirstUse(): Record<'v1.1' | 'v2', ValidateFunction> {
  if (validators) return validators;
  const ajv = new Ajv({ allErrors: false, strict: true, strictRequired: false, strictTypes: false, discriminator: true });
  return (validators = { 'v1.1': ajv.compile(definitionV11Schema), v2: ajv.compile(definitionV2Schema) });
}

/** SHA-256 hex of the YAML text exactly as saved (spec 2.1 schemaHash). */
export const schemaHashOf = (yamlText: string): string => createHash('sha256').update(yamlText, 'utf8').digest('hex');

/** The YAML a workflow starts with when it is created without one: valid, empty, manual. */
export function emptyDefinitionYaml(name: string): string {
  return `schemaVersion: v2\nname: ${JSON.stringify(name)}\ntrigger: {type: manual}\nnodes: []\nedges: []\n`;
}

/** Parses, validates against the schema of its `schemaVersion`, checks the graph, and compiles the plan. */
export function analyseDefinition(yamlText: string): AnalysedDefinition {
  if (Buffer.byteLength(yamlText, 'utf8') > MAX_DEFINITION_BYTES) {
    throw invalid('definitionYaml', `is larger than ${MAX_DEFINITION_BYTES} bytes`);
  }
  // Aliases are refused outright: they are how a small YAML text expands into a huge document.
  const doc = yamlOnFirstUse().parseDocument(yamlText, { uniqueKeys: true, prettyErrors: false });
  const parseError = doc.errors[0];
  if (parseError) throw invalid('definitionYaml', `is not valid YAML: ${parseError.message.split('\n')[0] ?? ''}`);
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 0 });
  } catch (err) {
    throw invalid('definitionYaml', `is not valid YAML: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('definitionYaml', 'must be a mapping');
  const raw = value as Record<string, unknown>;
  const version = raw.schemaVersion;
  if (version !== 'v1.1' && version !== 'v2') throw invalid('definitionYaml.schemaVersion', "must be 'v1.1' or 'v2'");
  const validate = validatorsOnFirstUse()[version];
  if (!validate(raw)) throw schemaError(validate.errors ?? []);

  const nodes = (version === 'v2' ? raw.nodes : raw.steps) as DefinitionNode[];
  const edges: PlanEdge[] = version === 'v2'
    ? ((raw.edges ?? []) as PlanEdge[]).map((e) => (e.when === undefined ? { source: e.source, target: e.target } : { source: e.source, target: e.target, when: e.when }))
    : nodes.slice(1).map((n, i) => ({ source: (nodes[i] as DefinitionNode).id, target: n.id }));
  checkGraph(version, nodes, edges);
  const deployedTrigger = triggerOf(raw.trigger as Record<string, unknown>);
  const plan: Plan = {
    name: raw.name as string,
    ...(nodes[0] ? { start: nodes[0].id } : {}),
    nodes: nodes.map((n) => compileNode(stripNames(n))),
    edges,
    ...(deployedTrigger.type === 'webhook' && deployedTrigger.priority !== undefined ? { webhookPriority: deployedTrigger.priority } : {}),
  };
  return {
    definitionVersion: version,
    schemaHash: schemaHashOf(yamlText),
    trigger: raw.trigger as Record<string, unknown>,
    deployedTrigger,
    providers: (raw.providers ?? []) as string[],
    config: (raw.config ?? {}) as Record<string, unknown>,
    plan,
  };
}

/**
 * What the schema cannot say: ids are unique, edges join existing nodes, and every node has an unambiguous next
 * step. Plain nodes have at most one way out (no implicit parallelism); a condition has one `when: true` and at
 * most one `when: false` edge; a loop has one `when: true` edge into its body and at most one exit.
 */
function checkGraph(version: DefinitionVersion, nodes: readonly DefinitionNode[], edges: readonly PlanEdge[]): void {
  const where = version === 'v2' ? 'nodes' : 'steps';
  const ids = new Set<string>();
  nodes.forEach((node, i) => {
    if (ids.has(node.id)) throw invalid(`definitionYaml.${where}.${i}.id`, `duplicates '${node.id}'`);
    if (node.kind === 'condition') {
      try { parseExpression(node.when); } catch { throw invalid(`definitionYaml.${where}.${i}.when`, 'is not a valid expression'); }
    }
    if (version === 'v1.1' && (node.kind === 'condition' || node.kind === 'loop')) {
      throw invalid(`definitionYaml.${where}.${i}.kind`, `'${node.kind}' needs edges; use schemaVersion v2`);
    }
    ids.add(node.id);
  });
  const kindOf = new Map(nodes.map((n) => [n.id, n.kind] as const));
  const outgoing = new Map<string, PlanEdge[]>();
  edges.forEach((edge, i) => {
    if (!ids.has(edge.source)) throw invalid(`definitionYaml.edges.${i}.source`, `names no node ('${edge.source}')`);
    if (!ids.has(edge.target)) throw invalid(`definitionYaml.edges.${i}.target`, `names no node ('${edge.target}')`);
    const list = outgoing.get(edge.source) ?? [];
    list.push(edge);
    outgoing.set(edge.source, list);
    const branching = kindOf.get(edge.source) === 'condition' || kindOf.get(edge.source) === 'loop';
    const sameBranch = list.filter((e) => (branching ? (e.when ?? false) === (edge.when ?? false) : true));
    if (sameBranch.length > 1) {
      throw invalid(`definitionYaml.edges.${i}`, branching
        ? `is a second '${String(edge.when ?? false)}' branch out of '${edge.source}'`
        : `is a second edge out of '${edge.source}' (parallel branches are not supported)`);
    }
    if (!branching && edge.when !== undefined) throw invalid(`definitionYaml.edges.${i}.when`, `only edges out of a condition or loop carry 'when'`);
  });
  for (const node of nodes) {
    if ((node.kind === 'condition' || node.kind === 'loop') && !(outgoing.get(node.id) ?? []).some((e) => e.when === true)) {
      throw invalid(`definitionYaml.nodes`, `'${node.id}' (${node.kind}) needs an edge with 'when: true'`);
    }
  }
  if (nodes.length > MAX_NODES) throw invalid(`definitionYaml.${where}`, `has more than ${MAX_NODES} entries`);
}

function stripNames(node: DefinitionNode): DefinitionNode {
  const { name: _name, ...rest } = node as DefinitionNode & { name?: string };
  return rest as DefinitionNode;
}

/** A plugin node becomes the agent node that runs it; the verb, options and instructions travel in the prompt. */
export function compileNode(node: DefinitionNode): PlanNode {
  if (node.kind !== 'plugin') return node;
  const split = node.verb.lastIndexOf('.');
  const lines = [
    `Run the plugin verb '${node.verb.slice(split + 1)}' of plugin '${node.verb.slice(0, split)}' (${node.verb}).`,
    `Options (JSON): ${canonicalJson(node.options ?? {})}`,
    ...(node.prompt ? ['', node.prompt] : []),
  ];
  return {
    id: node.id, kind: 'agent', prompt: lines.join('\n'), workType: 'plugin',
    ...(node.provider ? { provider: node.provider } : {}), ...(node.agentCardId ? { agentCardId: node.agentCardId } : {}),
  };
}

function schemaError(errors: readonly ErrorObject[]): TroupeError {
  const first = errors[0];
  if (!first) return invalid('definitionYaml', 'is invalid');
  const segments = first.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = first.params as { missingProperty?: string; additionalProperty?: string; tag?: string };
  if (first.keyword === 'required' && params.missingProperty) segments.push(params.missingProperty);
  if (first.keyword === 'additionalProperties' && params.additionalProperty) segments.push(params.additionalProperty);
  if (first.keyword === 'discriminator' && params.tag) segments.push(params.tag);
  const what = first.keyword === 'required' ? 'is required'
    : first.keyword === 'additionalProperties' ? 'is not allowed'
      : first.keyword === 'discriminator' ? (params.tag === 'type'
        ? 'names no known trigger type (manual, schedule, webhook)'
        : 'names no known node kind (agent, approval, condition, loop, wait, plugin)')
        : first.message ?? 'is invalid';
  return invalid(['definitionYaml', ...segments].join('.'), what);
}

function invalid(path: string, what: string): TroupeError {
  return new TroupeError('VALIDATION_FAILED', `field '${path}' ${what}`, { field: path });
}
