import { stringify } from 'yaml';
import { PLUGIN_VERB_PATTERN } from '../../../../../schemas/workflows/definition.js';
import type { CandidatePlan } from '../../api-types.js';

/**
 * The definition YAML a builder plan stands for, so a draft can be shown as YAML and opened in the editor. The same
 * mapping as the server's `definitionOf` (actors/kinds/authoring/plan.ts), which is how apply validates the plan:
 * `nodeKey` becomes `kind` (`plugin:<p>.<v>` becomes `kind: plugin, verb: <p>.<v>`), `config` the node's other
 * members, and the trigger is manual. test/integration/console/console.authoring.browser.test.ts checks that the
 * two agree on a synthesized plan.
 */
const PLUGIN_PREFIX = 'plugin:';
const pluginVerb = new RegExp(PLUGIN_VERB_PATTERN);

export function definitionOfPlan(plan: CandidatePlan): Record<string, unknown> {
  return {
    schemaVersion: 'v2',
    name: plan.name,
    description: plan.description,
    trigger: { type: 'manual' },
    nodes: plan.nodes.map((n) => {
      const verb = n.nodeKey.startsWith(PLUGIN_PREFIX) && pluginVerb.test(n.nodeKey.slice(PLUGIN_PREFIX.length)) ? n.nodeKey.slice(PLUGIN_PREFIX.length) : undefined;
      // id, kind (and verb) first, as people write them; the server's spread gives the same members.
      const head = verb === undefined ? { id: n.id, kind: n.nodeKey } : { id: n.id, kind: 'plugin', verb };
      return { ...head, ...n.config, ...head };
    }),
    edges: plan.edges.map((e) => (e.when === undefined ? { source: e.source, target: e.target } : { source: e.source, target: e.target, when: e.when })),
  };
}

export const yamlOfPlan = (plan: CandidatePlan): string => stringify(definitionOfPlan(plan), { lineWidth: 0 });
