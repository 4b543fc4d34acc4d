import { PLUGIN_VERB_PATTERN } from '../../../schemas/workflows/definition.js';
import { digestOf } from './digest.js';

/**
 * The vocabulary a canvas of one tenant and project may be built from (ops/decisions/0011-authoring.md): the node
 * kinds (`agent`, `approval`, `condition`, `loop`, `wait`, and plugin verbs as `plugin:<pluginId>.<verbId>`) and the
 * tool resources of the resource palette. Synthesis builds only from it, apply refuses a plan that leaves it, and
 * simulation resolves every node and tool through it. Its digest changes whenever any entry changes.
 *
 * Plugin verbs (daemon option snapshots) and palette tools belong to rooms that keep their own tables; they join
 * through `VocabularySource` (the stored one is `./stored-vocabulary.ts`). Entries carry only what
 * names the vocabulary, never volatile state (worker liveness, option choices, timestamps), so the digest moves
 * when a verb or tool is added or removed and not when a worker heartbeats.
 */

export const builtinNodeKeys = ['agent', 'approval', 'condition', 'loop', 'wait'] as const;
export type BuiltinNodeKey = (typeof builtinNodeKeys)[number];

/** How a node kind is asked about in Cedar: the action a run performs for it and the resource type it acts on. */
export interface NodeAuthorization {
  readonly action: 'dispatch' | 'operate';
  readonly resourceType: 'Session' | 'ApprovalGate' | 'WorkflowRun' | 'Integration';
}

export interface NodeKindEntry {
  readonly nodeKey: string;
  readonly source: 'builtin' | 'plugin';
  readonly description: string;
  /** Config members the node needs; the definition schema checks their types. */
  readonly requiredConfig: readonly string[];
  readonly authorization: NodeAuthorization;
}

export interface ToolEntry {
  /** Palette group: repo, tracker, … */
  readonly kind: string;
  readonly id: string;
  readonly name: string;
}

export interface Vocabulary {
  readonly nodeKinds: readonly NodeKindEntry[];
  readonly tools: readonly ToolEntry[];
}

/** A room that contributes entries (plugin verbs from option snapshots, tools from the palette). */
export interface VocabularySource {
  nodeKinds(orgId: string, projectId: string): Promise<readonly NodeKindEntry[]>;
  tools(orgId: string, projectId: string): Promise<readonly ToolEntry[]>;
}

const builtins: readonly NodeKindEntry[] = [
  { nodeKey: 'agent', source: 'builtin', description: 'dispatch an agent session with a prompt and wait for it to finish', requiredConfig: ['prompt'], authorization: { action: 'dispatch', resourceType: 'Session' } },
  { nodeKey: 'approval', source: 'builtin', description: 'open an approval gate and suspend until a person decides', requiredConfig: ['title'], authorization: { action: 'operate', resourceType: 'ApprovalGate' } },
  { nodeKey: 'condition', source: 'builtin', description: 'branch on a `when` expression', requiredConfig: ['when'], authorization: { action: 'operate', resourceType: 'WorkflowRun' } },
  { nodeKey: 'loop', source: 'builtin', description: 'repeat a body at most `maxIterations` times', requiredConfig: ['maxIterations'], authorization: { action: 'operate', resourceType: 'WorkflowRun' } },
  { nodeKey: 'wait', source: 'builtin', description: 'wait a number of `seconds`', requiredConfig: ['seconds'], authorization: { action: 'operate', resourceType: 'WorkflowRun' } },
];

const PLUGIN_PREFIX = 'plugin:';
const pluginVerbPattern = new RegExp(PLUGIN_VERB_PATTERN);

/** `plugin:<pluginId>.<verbId>`; undefined when the ids cannot form a verb a definition accepts. */
export function pluginNodeKey(pluginId: string, verbId: string): string | undefined {
  const verb = `${pluginId}.${verbId}`;
  return verbId.includes('.') || !pluginVerbPattern.test(verb) ? undefined : `${PLUGIN_PREFIX}${verb}`;
}

/** The `<pluginId>.<verbId>` a plugin node key names, or undefined for any other key. */
export function pluginVerbOf(nodeKey: string): string | undefined {
  if (!nodeKey.startsWith(PLUGIN_PREFIX)) return undefined;
  const verb = nodeKey.slice(PLUGIN_PREFIX.length);
  return pluginVerbPattern.test(verb) ? verb : undefined;
}

/** A plugin verb runs as an agent session (actors/kinds/workflow/definition.ts `compileNode`), so Cedar sees a dispatch. */
export function pluginNodeKind(nodeKey: string, pluginId: string, verbId: string): NodeKindEntry {
  return {
    nodeKey, source: 'plugin', description: `run verb '${verbId}' of plugin '${pluginId}' as an agent session`,
    requiredConfig: [], authorization: { action: 'dispatch', resourceType: 'Session' },
  };
}

/** The vocabulary of one project: built-ins first, then each source's entries sorted, so its digest is stable. */
export async function loadVocabulary(orgId: string, projectId: string, sources: readonly VocabularySource[] = []): Promise<Vocabulary> {
  const plugins: NodeKindEntry[] = [];
  const tools: ToolEntry[] = [];
  for (const source of sources) {
    for (const entry of await source.nodeKinds(orgId, projectId)) {
      // A source may only add plugin verbs; it can never redefine what a built-in kind means.
      if (entry.source === 'plugin' && pluginVerbOf(entry.nodeKey) !== undefined) plugins.push(entry);
    }
    tools.push(...(await source.tools(orgId, projectId)));
  }
  const byKey = (a: { nodeKey: string }, b: { nodeKey: string }) => (a.nodeKey < b.nodeKey ? -1 : a.nodeKey > b.nodeKey ? 1 : 0);
  const toolKey = (t: ToolEntry) => `${t.kind}/${t.id}`;
  const byTool = (a: ToolEntry, b: ToolEntry) => (toolKey(a) < toolKey(b) ? -1 : toolKey(a) > toolKey(b) ? 1 : 0);
  return { nodeKinds: [...builtins, ...dedupe(plugins.sort(byKey), (e) => e.nodeKey)], tools: dedupe(tools.sort(byTool), toolKey) };
}

export const vocabularyDigest = (vocabulary: Vocabulary): string => digestOf(vocabulary);

export function nodeKindOf(vocabulary: Vocabulary, nodeKey: string): NodeKindEntry | undefined {
  return vocabulary.nodeKinds.find((k) => k.nodeKey === nodeKey);
}

/** A tool reference is `<kind>/<id>` or a bare id; undefined when the palette has no such tool. */
export function toolOf(vocabulary: Vocabulary, ref: string): ToolEntry | undefined {
  return vocabulary.tools.find((t) => `${t.kind}/${t.id}` === ref || t.id === ref);
}

function dedupe<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => (seen.has(keyOf(item)) ? false : (seen.add(keyOf(item)), true)));
}
