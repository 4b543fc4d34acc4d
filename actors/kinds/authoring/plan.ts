import { TroupeError } from '../../../ops/kernel/errors.js';
import { canonicalJson } from '../../../ops/kernel/canonical-json.js';
import { analyseDefinition, type AnalysedDefinition } from '../workflow/definition.js';
import { digestOf } from './digest.js';
import { nodeKindOf, pluginVerbOf, type Vocabulary } from './vocabulary.js';
import type { CandidatePlan } from '../../../schemas/authoring/proposal.js';
export { type PlanNode, type PlanEdge, type CandidatePlan } from '../../../schemas/authoring/proposal.js';

export const candidateDigest = (target: string, plan: CandidatePlan): string => digestOf({ target, plan });

/** The v2 definition a plan stands for; its members are exactly the definition schema's. */
export function definitionOf(plan: CandidatePlan): Record<string, unknown> {
  return {
    schemaVersion: 'v2',
    name: plan.name,
    description: plan.description,
    trigger: { type: 'manual' },
    nodes: plan.nodes.map((n) => {
      // `plugin:<p>.<v>` on the canvas is `{kind: plugin, verb: <p>.<v>}` in the definition.
      const verb = pluginVerbOf(n.nodeKey);
      return verb === undefined ? { ...n.config, id: n.id, kind: n.nodeKey } : { ...n.config, id: n.id, kind: 'plugin', verb };
    }),
    edges: plan.edges.map((e) => (e.when === undefined ? { source: e.source, target: e.target } : { source: e.source, target: e.target, when: e.when })),
  };
}

/** Throws VALIDATION_FAILED naming the plan field at fault; returns the analysed definition otherwise. */
export function assertValidPlan(plan: CandidatePlan, vocabulary: Vocabulary): AnalysedDefinition {
  plan.nodes.forEach((node, i) => {
    if (!nodeKindOf(vocabulary, node.nodeKey)) {
      throw new TroupeError('VALIDATION_FAILED', `field 'plan.nodes.${i}.nodeKey' names no node kind of this project's vocabulary`, { field: `plan.nodes.${i}.nodeKey` });
    }
    for (const reserved of ['id', 'kind', ...(pluginVerbOf(node.nodeKey) === undefined ? [] : ['verb'])]) {
      if (Object.prototype.hasOwnProperty.call(node.config, reserved)) {
        throw new TroupeError('VALIDATION_FAILED', `field 'plan.nodes.${i}.config.${reserved}' is not allowed`, { field: `plan.nodes.${i}.config.${reserved}` });
      }
    }
  });
  try {
    // JSON text is YAML text: the definition is checked exactly as a publish would check it.
    return analyseDefinition(canonicalJson(definitionOf(plan)));
  } catch (err) {
    if (err instanceof TroupeError && err.code === 'VALIDATION_FAILED') {
      const field = planFieldOf(typeof err.details?.field === 'string' ? err.details.field : 'definitionYaml');
      throw new TroupeError('VALIDATION_FAILED', err.message.replace(/'definitionYaml[^']*'/, `'${field}'`), { field });
    }
    throw err;
  }
}

/** `definitionYaml.nodes.2.prompt` → `plan.nodes.2.config.prompt`; `…kind` → `…nodeKey`. */
function planFieldOf(definitionField: string): string {
  const field = definitionField.replace(/^definitionYaml/, 'plan');
  const node = /^plan\.nodes\.(\d+)\.(.+)$/.exec(field);
  if (!node) return field;
  if (node[2] === 'id') return field;
  if (node[2] === 'kind' || node[2] === 'verb') return `plan.nodes.${node[1]}.nodeKey`;
  return `plan.nodes.${node[1]}.config.${node[2]}`;
}
