import { canonicalJson } from '../../../ops/kernel/canonical-json.js';
import type { AgentCardPayload, Overlay } from '../../../schemas/agents/agent-card.js';
export { type AgentCardPayload, type Overlay } from '../../../schemas/agents/agent-card.js';

/**
 * Agent-card payloads in normal form, and the overlay an installing org lays over a marketplace card (decision
 * 0015). Normal form fills defaults and sorts the capability manifest, so two payloads that mean the same compare
 * equal and deltas show only real changes. An overlay maps dotted paths into the payload (`config.temperature`) to
 * the org's own values; it may only target paths the source payload has.
 */

export function normalizePayload(raw: {
  name: string; description?: string; prompt: string; capabilities?: readonly string[]; model?: string; config?: Record<string, unknown>;
}): AgentCardPayload {
  return {
    name: raw.name,
    description: raw.description ?? '',
    prompt: raw.prompt,
    capabilities: [...new Set(raw.capabilities ?? [])].sort(),
    ...(raw.model !== undefined ? { model: raw.model } : {}),
    config: JSON.parse(canonicalJson(raw.config ?? {})) as Record<string, unknown>,
  };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Leaf values of a payload by dotted path; arrays and primitives are leaves. */
export function leaves(value: unknown, prefix = ''): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (!isPlainObject(value)) {
    if (prefix !== '') out.set(prefix, value);
    return out;
  }
  const keys = Object.keys(value).sort();
  if (keys.length === 0 && prefix !== '') out.set(prefix, {});
  for (const key of keys) {
    for (const [path, leaf] of leaves(value[key], prefix === '' ? key : `${prefix}.${key}`)) out.set(path, leaf);
  }
  return out;
}

/** The value at a dotted path, or undefined when the path does not exist. */
export function valueAt(value: unknown, path: string): unknown {
  let node: unknown = value;
  for (const segment of path.split('.')) {
    if (!isPlainObject(node) || !Object.prototype.hasOwnProperty.call(node, segment)) return undefined;
    node = node[segment];
  }
  return node;
}

export const pathExists = (value: unknown, path: string): boolean => valueAt(value, path) !== undefined;

/** The payload with each overlay value set at its path. Paths that do not exist are skipped, never created. */
export function applyOverlay(payload: AgentCardPayload, overlay: Overlay): AgentCardPayload {
  const copy = JSON.parse(JSON.stringify(payload)) as Record<string, unknown>;
  for (const [path, value] of Object.entries(overlay)) {
    if (!pathExists(copy, path)) continue;
    const segments = path.split('.');
    const last = segments.pop()!;
    let node = copy;
    for (const segment of segments) node = node[segment] as Record<string, unknown>;
    node[last] = value;
  }
  // An overlay may put any value at a path it names: the result is a valid card only once checked (the install route checks it).
  return copy as unknown as AgentCardPayload;
}

export const sameValue = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

/** Overlay keys whose target the payload lacks. */
export const missingTargets = (payload: AgentCardPayload, overlay: Overlay): string[] =>
  Object.keys(overlay).filter((path) => !pathExists(payload, path)).sort();
