import { leaves, sameValue, valueAt, pathExists, type AgentCardPayload, type Overlay } from './payload.js';
import type { SourceVersion } from '../../../schemas/agents/agent-card.js';
export { type SourceVersion } from '../../../schemas/agents/agent-card.js';

/**
 * What accepting a marketplace update would change for one installed card (spec 4.6): the source versions, the
 * normalized payload delta, the prompt delta, the capability-manifest changes, and how the org's overlay fares.
 * An overlay key is `preserved` when the source left its target alone, `conflicting` when the source changed the
 * value the org overrides (the org's value still wins on accept), and `dropped` when its target vanished (accept
 * removes it and records each drop in the audit chain).
 */

export interface UpdatePreview {
  readonly available: boolean;
  readonly listingId: string;
  // Versions and times only: who changed the source is another org's internal user id, not the installer's business.
  readonly from: { readonly version: number; readonly createdAt: string };
  readonly to: { readonly version: number; readonly createdAt: string };
  readonly payloadDelta: {
    readonly added: { path: string; value: unknown }[];
    readonly removed: { path: string; value: unknown }[];
    readonly changed: { path: string; from: unknown; to: unknown }[];
  };
  readonly promptDelta: { readonly changed: boolean; readonly removedLines: string[]; readonly addedLines: string[] };
  readonly capabilityChanges: { readonly added: string[]; readonly removed: string[] };
  readonly overlay: {
    readonly preserved: string[];
    readonly conflicting: { key: string; local: unknown; upstreamFrom: unknown; upstreamTo: unknown }[];
    readonly dropped: string[];
  };
}

export function previewUpdate(listingId: string, pinned: SourceVersion, latest: SourceVersion, overlay: Overlay): UpdatePreview {
  // The prompt and the manifest get deltas of their own; the payload delta covers everything else.
  const strip = (p: AgentCardPayload) => ({ ...p, prompt: undefined, capabilities: undefined });
  const before = leaves(JSON.parse(JSON.stringify(strip(pinned.payload))));
  const after = leaves(JSON.parse(JSON.stringify(strip(latest.payload))));
  const added = [...after].filter(([path]) => !before.has(path)).map(([path, value]) => ({ path, value }));
  const removed = [...before].filter(([path]) => !after.has(path)).map(([path, value]) => ({ path, value }));
  const changed = [...after].filter(([path, value]) => before.has(path) && !sameValue(before.get(path), value))
    .map(([path, to]) => ({ path, from: before.get(path), to }));

  const preserved: string[] = [];
  const conflicting: UpdatePreview['overlay']['conflicting'] = [];
  const dropped: string[] = [];
  for (const key of Object.keys(overlay).sort()) {
    if (!pathExists(latest.payload, key)) dropped.push(key);
    else if (sameValue(valueAt(pinned.payload, key), valueAt(latest.payload, key))) preserved.push(key);
    else conflicting.push({ key, local: overlay[key], upstreamFrom: valueAt(pinned.payload, key) ?? null, upstreamTo: valueAt(latest.payload, key) });
  }

  return {
    available: latest.version > pinned.version,
    listingId,
    from: { version: pinned.version, createdAt: pinned.createdAt },
    to: { version: latest.version, createdAt: latest.createdAt },
    payloadDelta: { added, removed, changed },
    promptDelta: promptDelta(pinned.payload.prompt, latest.payload.prompt),
    capabilityChanges: {
      added: latest.payload.capabilities.filter((c) => !pinned.payload.capabilities.includes(c)),
      removed: pinned.payload.capabilities.filter((c) => !latest.payload.capabilities.includes(c)),
    },
    overlay: { preserved, conflicting, dropped },
  };
}

/** Lines only in the old prompt and lines only in the new one (a multiset difference, order kept). */
function promptDelta(from: string, to: string): UpdatePreview['promptDelta'] {
  if (from === to) return { changed: false, removedLines: [], addedLines: [] };
  const minus = (a: string[], b: string[]) => {
    const pool = new Map<string, number>();
    for (const line of b) pool.set(line, (pool.get(line) ?? 0) + 1);
    return a.filter((line) => {
      const left = pool.get(line) ?? 0;
      if (left > 0) { pool.set(line, left - 1); return false; }
      return true;
    });
  };
  const a = from.split('\n');
  const b = to.split('\n');
  return { changed: true, removedLines: minus(a, b), addedLines: minus(b, a) };
}
