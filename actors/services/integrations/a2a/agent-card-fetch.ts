import { OutboundGuard, OutboundRefused } from '../outbound/index.js';
import type { ExternalAgentCard } from '../../../../schemas/agents/external-agent.js';
export { type AgentSkill, type ExternalAgentCard } from '../../../../schemas/agents/external-agent.js';

/**
 * Fetches an external agent's A2A Agent Card through the outbound guard (decision 0015). The card is looked up at
 * the well-known path of the agent's origin: `/.well-known/agent-card.json` (A2A 0.3 and 1.0), falling back to the
 * older `/.well-known/agent.json` when that answers 404. A URL that itself names a `.json` document is taken as the
 * card's own address. Only the fields Troupe shows (spec 2.7: name, url, version, description, skills) are kept,
 * each bounded, since the card is written by whoever runs the agent.
 */

export const CARD_PATHS = ['/.well-known/agent-card.json', '/.well-known/agent.json'] as const;
/** Cards are small documents; anything larger is not a card we will store. */
export const MAX_CARD_BYTES = 256 * 1024;
export const CARD_FETCH_TIMEOUT_MS = 5_000;
const MAX_SKILLS = 100;

export type CardFetch =
  | { readonly reachable: true; readonly card: ExternalAgentCard }
  | { readonly reachable: false; readonly reason: string };

const text = (v: unknown, max: number): string => (typeof v === 'string' ? v.slice(0, max) : '');

export function parseAgentCard(raw: unknown, registeredUrl: string): ExternalAgentCard | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const r = raw as Record<string, unknown>;
  if (typeof r.name !== 'string' || r.name.trim() === '') return undefined;
  // A2A 1.0 moved the endpoint into supportedInterfaces[]; older cards carry a top-level url.
  const interfaces = Array.isArray(r.supportedInterfaces) ? r.supportedInterfaces : [];
  const firstInterface = interfaces.find((i): i is { url: string } => typeof (i as { url?: unknown })?.url === 'string');
  const endpoint = typeof r.url === 'string' ? r.url : firstInterface?.url ?? registeredUrl;
  let url = registeredUrl;
  try {
    const parsed = new URL(endpoint);
    if (parsed.protocol === 'http:' || parsed.protocol === 'https:') url = parsed.toString().slice(0, 2048);
  } catch { /* an unusable endpoint leaves the registered URL */ }
  const skills = (Array.isArray(r.skills) ? r.skills : []).slice(0, MAX_SKILLS)
    .filter((s): s is Record<string, unknown> => typeof s === 'object' && s !== null && !Array.isArray(s))
    .map((s) => ({
      id: text(s.id, 200), name: text(s.name, 200), description: text(s.description, 2000),
      tags: (Array.isArray(s.tags) ? s.tags : []).filter((t): t is string => typeof t === 'string').slice(0, 32).map((t) => t.slice(0, 64)),
    }));
  return { name: r.name.slice(0, 200), url, version: text(r.version, 64), description: text(r.description, 4000), skills };
}

/** Card addresses to try, in order. */
export function cardUrls(agentUrl: string): string[] {
  const u = new URL(agentUrl);
  if (u.pathname.endsWith('.json')) return [u.toString()];
  return CARD_PATHS.map((path) => new URL(path, u.origin).toString());
}

/**
 * Fetches and parses the card. A target the guard refuses by policy (scheme, credentials, internal address) is
 * thrown as OutboundRefused so the caller can refuse the registration; anything else that goes wrong makes the
 * agent unreachable for now.
 */
export async function fetchAgentCard(guard: OutboundGuard, agentUrl: string): Promise<CardFetch> {
  let lastReason = 'no card found';
  for (const url of cardUrls(agentUrl)) {
    try {
      const res = await guard.request(url, { timeoutMs: CARD_FETCH_TIMEOUT_MS, maxBytes: MAX_CARD_BYTES, headers: { accept: 'application/json' } });
      if (res.status === 404) { lastReason = 'card not found (404)'; continue; }
      if (res.status < 200 || res.status > 299) return { reachable: false, reason: `card fetch answered ${res.status}` };
      let parsed: unknown;
      try {
        parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(res.body));
      } catch {
        return { reachable: false, reason: 'card is not JSON' };
      }
      const card = parseAgentCard(parsed, agentUrl);
      return card ? { reachable: true, card } : { reachable: false, reason: 'card lacks a name' };
    } catch (err) {
      if (err instanceof OutboundRefused && isPolicyRefusal(err)) throw err;
      return { reachable: false, reason: err instanceof OutboundRefused ? `${err.reason}: ${err.message}` : 'card fetch failed' };
    }
  }
  return { reachable: false, reason: lastReason };
}

export const isPolicyRefusal = (err: OutboundRefused): boolean =>
  err.reason === 'scheme' || err.reason === 'credentials' || err.reason === 'address';
