import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import {
  externalAgentAddress, externalAgentId, fetchAgentCard, type ExternalAgentMsg, type ExternalAgentReply,
} from '../../actors/services/integrations/a2a/index.js';
import { OutboundRefused } from '../../actors/services/integrations/outbound/index.js';
import { externalAgentListReply, externalAgentReply, registerExternalAgentBody, updateExternalAgentBody } from '../../schemas/agents/external-agent.js';
import { externalAgentView, findExternalAgent, listExternalAgents, type ExternalAgentView } from '../../storage/integrations/a2a.js';
import { isUuid } from '../../storage/identity/rows.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal } from '../principal.js';
import { actorIdOf } from './agent-cards.js';

/**
 * External agents (A2A, decision 0015). Registering fetches the agent's card through the outbound guard; a target
 * the guard refuses by policy (internal address, other scheme, credentials in the URL) is 400 and nothing is
 * stored, while an agent that cannot be reached right now is stored with `reachable: false`. Listing re-fetches
 * cards older than REFRESH_AFTER_MS in the background, so `reachable` and `lastFetchedAt` stay current while the
 * org looks at its agents. Registering and changing trust take the `manage-org` right (admin, owner); the trust
 * level is set by a human only (spec 4.5: session cookie or user token). Another org's agent is 404.
 */

export const REFRESH_AFTER_MS = 5 * 60_000;
/** At most this many background re-fetches per listing, so one list call cannot fan out without bound. */
const MAX_REFRESHES_PER_LIST = 5;

const integration = (orgId: string, id: string) => ({ type: 'Integration', id, orgId });

/** The URL as stored and compared: parsed, fragment dropped. */
function normalizeUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new TroupeError('VALIDATION_FAILED', 'url: not an absolute URL', { field: 'url' });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TroupeError('VALIDATION_FAILED', 'url: only http and https agents are supported', { field: 'url' });
  if (u.username || u.password) throw new TroupeError('VALIDATION_FAILED', 'url: credentials in the URL are not accepted', { field: 'url' });
  u.hash = '';
  return u.toString();
}

async function refresh(deps: Deps, agent: ExternalAgentView): Promise<void> {
  const fetchedAt = deps.clock.now();
  let card = null;
  try {
    const result = await fetchAgentCard(deps.services.outbound, agent.url);
    card = result.reachable ? result.card : null;
  } catch { /* refused by policy now (the allow list changed): unreachable */ }
  const msg: ExternalAgentMsg = { type: 'externalAgent.refreshed', orgId: agent.orgId, card, fetchedAt };
  await deps.ask(externalAgentAddress(agent.id), msg);
}

/** `action` on the external agent `:id` names, found in the caller's org first (404 otherwise); the handler gets it. */
const onAgent = (action: 'read' | 'manage-org'): RouteAuthorization<Deps, any, ExternalAgentView> => ({
  async find(req, deps, p) {
    const id = req.params.id ?? '';
    const agent = isUuid(id) ? await findExternalAgent(deps.db, p.orgId, id) : undefined;
    if (!agent) throw new TroupeError('NOT_FOUND', 'external agent not found');
    return agent;
  },
  action,
  resource: (req, p) => integration(p.orgId, req.params.id ?? ''),
});

export function a2aRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/a2a/agents', auth: 'org', tags: ['a2a'], successStatus: 201,
      summary: 'Register an external A2A agent by URL; its card is fetched from the well-known path through the outbound guard',
      bodySchema: registerExternalAgentBody, responseSchema: externalAgentReply,
      authorize: {
        // The agent's id is derived from its normalized URL, so a malformed URL is 400 before Cedar is asked.
        find: async (req, _deps, p) => {
          const url = normalizeUrl(req.body.url);
          return { url, id: externalAgentId(p.orgId, url) };
        },
        action: 'manage-org',
        resource: (_req, p, { id }) => integration(p.orgId, id),
      },
      async handler(req, deps, { found: { url, id } }) {
        const p = orgPrincipal(req);
        if (await findExternalAgent(deps.db, p.orgId, id)) throw new TroupeError('ALREADY_EXISTS', 'this agent is already registered', { id });
        const fetchedAt = deps.clock.now();
        let fetched;
        try {
          fetched = await fetchAgentCard(deps.services.outbound, url);
        } catch (err) {
          if (err instanceof OutboundRefused) throw new TroupeError('VALIDATION_FAILED', `url: ${err.message}`, { field: 'url', reason: err.reason });
          throw err;
        }
        const msg: ExternalAgentMsg = {
          type: 'externalAgent.register', orgId: p.orgId, url, card: fetched.reachable ? fetched.card : null, fetchedAt, by: actorIdOf(p),
        };
        const reply = await deps.ask<ExternalAgentReply>(externalAgentAddress(id), msg);
        return { status: 201, body: { agent: externalAgentView(reply.agent) } };
      },
    }),
    route({
      method: 'get', path: '/api/a2a/agents', auth: 'org', tags: ['a2a'],
      summary: 'The org\'s external agents; stale cards are re-fetched in the background', responseSchema: externalAgentListReply,
      authorize: { action: 'read', resource: (_req, p) => integration(p.orgId, 'a2a') },
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const agents = await listExternalAgents(deps.db, p.orgId);
        const now = deps.clock.now();
        const stale = agents.filter((a) => a.lastFetchedAt === null || now - Date.parse(a.lastFetchedAt) > REFRESH_AFTER_MS).slice(0, MAX_REFRESHES_PER_LIST);
        for (const agent of stale) {
          refresh(deps, agent).catch((err: unknown) => deps.log.debug({ err, agentId: agent.id }, 'external agent refresh failed'));
        }
        return { body: { agents } };
      },
    }),
    route({
      method: 'get', path: '/api/a2a/agents/:id', auth: 'org', tags: ['a2a'],
      summary: 'One external agent of the caller\'s org', responseSchema: externalAgentReply,
      authorize: onAgent('read'),
      async handler(_req, _deps, { found: agent }) {
        return { body: { agent } };
      },
    }),
    route({
      method: 'patch', path: '/api/a2a/agents/:id', auth: 'human', tags: ['a2a'],
      summary: 'Set an external agent\'s trust level (untrusted, verified, internal); user token or session cookie, admin or owner',
      bodySchema: updateExternalAgentBody, responseSchema: externalAgentReply,
      authorize: onAgent('manage-org'),
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const id = req.params.id ?? '';
        const msg: ExternalAgentMsg = { type: 'externalAgent.setTrust', orgId: p.orgId, trustLevel: req.body.trustLevel, by: actorIdOf(p) };
        const reply = await deps.ask<ExternalAgentReply>(externalAgentAddress(id), msg);
        return { body: { agent: externalAgentView(reply.agent) } };
      },
    }),
    route({
      method: 'post', path: '/api/a2a/agents/:id/refresh', auth: 'org', tags: ['a2a'], bodyKind: 'none',
      summary: 'Re-fetch an external agent\'s card now', responseSchema: externalAgentReply,
      authorize: onAgent('manage-org'),
      async handler(req, deps, { found: agent }) {
        const p = orgPrincipal(req);
        const id = req.params.id ?? '';
        await refresh(deps, agent);
        const now = await findExternalAgent(deps.db, p.orgId, id);
        return { body: { agent: now ?? agent } };
      },
    }),
  ];
}
