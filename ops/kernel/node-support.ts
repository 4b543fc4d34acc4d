/**
 * Which Node.js runs Troupe (issue 31): 24 (active LTS) and 22 (maintenance LTS) are supported. Node 20 reached its end
 * of life on 30 April 2026; it still runs, with one warning line at start, because many machines still have it.
 * Anything older is refused with one clear line.
 */
export const SUPPORTED_NODE_MAJORS = [24, 22] as const;
const END_OF_LIFE_STILL_RUNNING = 20;

export type NodeSupport = { readonly verdict: 'supported' } | { readonly verdict: 'end-of-life' | 'refused'; readonly line: string };

export function nodeSupport(version: string = process.versions.node): NodeSupport {
  const major = Number(version.split('.')[0]);
  const supported = `Troupe supports Node ${SUPPORTED_NODE_MAJORS.join(' and ')} (LTS)`;
  if (major > END_OF_LIFE_STILL_RUNNING) return { verdict: 'supported' };
  if (major === END_OF_LIFE_STILL_RUNNING) {
    return { verdict: 'end-of-life', line: `Node ${version} is past its end of life (30 April 2026) and gets no security fixes; ${supported}` };
  }
  return { verdict: 'refused', line: `Node ${version} is too old to run Troupe; ${supported}` };
}
