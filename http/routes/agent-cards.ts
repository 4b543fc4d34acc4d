import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { agentCardAddress, type AgentCardMsg, type AgentCardReply } from '../../actors/kinds/agent-card/index.js';
import { applyOverlay, missingTargets } from '../../actors/services/marketplace/payload.js';
import { previewUpdate } from '../../actors/services/marketplace/update-preview.js';
import { ajv, compileOnFirstUse } from '../../schemas/ajv.js';
import {
  agentCardPayload, agentCardReply, createAgentCardBody, installBody, listingListQuery, listingListReply, listingReply, publishListingBody,
  updateAgentCardBody, updatePreviewReply,
} from '../../schemas/agents/agent-card.js';
import { findCard, findListing, listingSourceCard, listListings, sourceVersion, type AgentCardView } from '../../storage/agent-cards/cards.js';
import { isUuid } from '../../storage/identity/rows.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal } from '../principal.js';

/**
 * Agent cards and the marketplace (decision 0015). Cards are org-owned and written through the agent-card actor;
 * another org's card is 404. Listings are the deliberately shared part: any authenticated org sees every listing
 * and may install one, which creates a card of its own pinned to the listed version with its overlay laid over it.
 * Members edit and install cards; publishing to the marketplace needs the `publish` right (admin, owner).
 */

/** Who did it, as recorded in versions and the audit chain. */
export function actorIdOf(p: Principal): string {
  switch (p.kind) {
    case 'user': return p.userId;
    case 'apiKey': return `key:${p.keyId}`;
    case 'machine': return `client:${p.clientId}`;
    case 'runtime': return `worker:${p.workerId}`;
    case 'admin': return 'admin';
  }
}

const cardResource = (orgId: string, id: string) => ({ type: 'AgentCard', id, orgId });
const validPayload = compileOnFirstUse(ajv, agentCardPayload);

async function ownCard(deps: Deps, orgId: string, id: string | undefined): Promise<AgentCardView> {
  const card = id !== undefined && isUuid(id) ? await findCard(deps.db, orgId, id) : undefined;
  if (!card) throw new TroupeError('NOT_FOUND', 'agent card not found');
  return card;
}

const view = (reply: AgentCardReply) => ({
  id: reply.card.id, orgId: reply.card.orgId, name: reply.card.payload.name, version: reply.card.version, payload: reply.card.payload,
  install: reply.card.install ? { listingId: reply.card.install.listingId, pinnedVersion: reply.card.install.pinnedVersion, overlay: reply.card.install.overlay } : null,
  createdBy: reply.card.createdBy, createdAt: new Date(reply.card.createdAt).toISOString(), updatedAt: new Date(reply.card.updatedAt).toISOString(),
});

/** `action` on the card `:id` names, found in the caller's org first (404 otherwise); the handler gets the card. */
const onCard = (action: 'read' | 'edit'): RouteAuthorization<Deps, any, AgentCardView> => ({
  find: (req, deps, p) => ownCard(deps, p.orgId, req.params.id),
  action,
  resource: (_req, p, card) => cardResource(p.orgId, card.id),
});

/** `edit` on a card about to be created: its id is chosen before Cedar is asked, so the decision names the card made. */
const newCard: RouteAuthorization<Deps, any, string> = {
  find: async () => randomUUID(),
  action: 'edit',
  resource: (_req, p, id) => cardResource(p.orgId, id),
};

/** The installed card's pinned and newest source versions; 404 when the listing or its card is gone. */
async function sourcesOf(deps: Deps, card: AgentCardView) {
  if (!card.install) throw new TroupeError('CONFLICT', 'this card was not installed from the marketplace');
  const sourceCardId = await listingSourceCard(deps.db, card.install.listingId);
  const pinned = sourceCardId ? await sourceVersion(deps.db, sourceCardId, card.install.pinnedVersion) : undefined;
  const latest = sourceCardId ? await sourceVersion(deps.db, sourceCardId) : undefined;
  if (!sourceCardId || !pinned || !latest) throw new TroupeError('NOT_FOUND', 'the listing this card was installed from is gone');
  return { install: card.install, pinned, latest };
}

export function agentCardRoutes(): Route<Deps>[] {
  return [...agentCardOwnRoutes(), ...marketplaceRoutes()];
}

function agentCardOwnRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/agent-cards', auth: 'org', tags: ['agents'], successStatus: 201,
      summary: 'Create an agent card (version 1)', bodySchema: createAgentCardBody, responseSchema: agentCardReply,
      authorize: newCard,
      async handler(req, deps, { found: id }) {
        const p = orgPrincipal(req);
        const msg: AgentCardMsg = { type: 'agentCard.create', orgId: p.orgId, payload: req.body, by: actorIdOf(p) };
        return { status: 201, body: { agentCard: view(await deps.ask<AgentCardReply>(agentCardAddress(id), msg)) } };
      },
    }),
    route({
      method: 'get', path: '/api/agent-cards/:id', auth: 'org', tags: ['agents'],
      summary: 'One agent card of the caller\'s org', responseSchema: agentCardReply,
      authorize: onCard('read'),
      async handler(_req, _deps, { found: card }) {
        return { body: { agentCard: card } };
      },
    }),
    route({
      method: 'patch', path: '/api/agent-cards/:id', auth: 'org', tags: ['agents'],
      summary: 'Change an authored agent card; a changed payload appends a new version', bodySchema: updateAgentCardBody, responseSchema: agentCardReply,
      authorize: onCard('edit'),
      async handler(req, deps, { found: card }) {
        const p = orgPrincipal(req);
        const msg: AgentCardMsg = { type: 'agentCard.update', orgId: p.orgId, changes: req.body, by: actorIdOf(p) };
        return { body: { agentCard: view(await deps.ask<AgentCardReply>(agentCardAddress(card.id), msg)) } };
      },
    }),
  ];
}

function marketplaceRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/marketplace/listings', auth: 'org', tags: ['agents'], successStatus: 201,
      summary: 'Publish an authored agent card to the marketplace; the listing follows the card\'s newest version. 409 when the org has its quota of listings (TROUPE_MARKETPLACE_LISTINGS_PER_ORG)',
      bodySchema: publishListingBody, responseSchema: listingReply,
      authorize: {
        find: (req, deps, p) => ownCard(deps, p.orgId, req.body.agentCardId),
        action: 'publish',
        resource: (_req, p, card) => cardResource(p.orgId, card.id),
      },
      async handler(req, deps, { found: card }) {
        const p = orgPrincipal(req);
        const msg: AgentCardMsg = {
          type: 'agentCard.publish', orgId: p.orgId, listingId: randomUUID(), by: actorIdOf(p), quota: deps.config.marketplaceListingsPerOrg,
        };
        const reply = await deps.ask<AgentCardReply>(agentCardAddress(card.id), msg);
        const listing = reply.listingId ? await findListing(deps.db, reply.listingId) : undefined;
        if (!listing) throw new TroupeError('INTERNAL', 'published listing not readable');
        return { status: 201, body: { listing } };
      },
    }),
    route({
      method: 'get', path: '/api/marketplace/listings', auth: 'org', tags: ['agents'],
      summary: 'Marketplace listings of every org, newest first, a page at a time (cursor), filtered by publisherOrgId and text (q)',
      querySchema: listingListQuery, responseSchema: listingListReply,
      async handler(req, deps) {
        const cursor = req.query.get('cursor');
        const publisherOrgId = req.query.get('publisherOrgId');
        const text = req.query.get('q');
        return {
          body: await listListings(deps.db, {
            limit: Number(req.query.get('limit') ?? 50),
            ...(cursor !== null ? { cursor } : {}), ...(publisherOrgId !== null ? { publisherOrgId } : {}), ...(text !== null ? { text } : {}),
          }),
        };
      },
    }),
    route({
      method: 'post', path: '/api/agent-cards/marketplace-install', auth: 'org', tags: ['agents'], successStatus: 201,
      summary: 'Install a marketplace listing into the caller\'s org, pinned to its newest version, with an optional overlay',
      bodySchema: installBody, responseSchema: agentCardReply,
      authorize: newCard,
      async handler(req, deps, { found: id }) {
        const p = orgPrincipal(req);
        const sourceCardId = await listingSourceCard(deps.db, req.body.listingId);
        const source = sourceCardId ? await sourceVersion(deps.db, sourceCardId) : undefined;
        if (!sourceCardId || !source) throw new TroupeError('NOT_FOUND', 'listing not found');
        const overlay = req.body.overlay ?? {};
        const missing = missingTargets(source.payload, overlay);
        if (missing.length > 0) throw new TroupeError('VALIDATION_FAILED', `overlay: no such field in the listed card: ${missing.join(', ')}`, { field: 'overlay' });
        if (!validPayload(applyOverlay(source.payload, overlay))) {
          throw new TroupeError('VALIDATION_FAILED', 'overlay: the card with this overlay is not a valid agent card', { field: 'overlay' });
        }
        const msg: AgentCardMsg = {
          type: 'agentCard.install', orgId: p.orgId, listingId: req.body.listingId, sourceCardId, source, overlay, by: actorIdOf(p),
        };
        return { status: 201, body: { agentCard: view(await deps.ask<AgentCardReply>(agentCardAddress(id), msg)) } };
      },
    }),
    route({
      method: 'get', path: '/api/agent-cards/:id/marketplace-install/update', auth: 'org', tags: ['agents'],
      summary: 'Preview the newest source version of an installed card: version metadata, payload and prompt deltas, capability changes, overlay keys preserved, conflicting and dropped',
      responseSchema: updatePreviewReply,
      authorize: onCard('read'),
      async handler(_req, deps, { found: card }) {
        const { install, pinned, latest } = await sourcesOf(deps, card);
        return { body: { update: previewUpdate(install.listingId, pinned, latest, install.overlay) } };
      },
    }),
    route({
      method: 'post', path: '/api/agent-cards/:id/marketplace-install/update', auth: 'org', tags: ['agents'], bodyKind: 'none',
      summary: 'Accept the newest source version: re-pin, re-materialize, drop overlay keys whose targets vanished (audited), in one transaction',
      responseSchema: agentCardReply,
      authorize: onCard('edit'),
      async handler(req, deps, { found: card }) {
        const p = orgPrincipal(req);
        const { latest } = await sourcesOf(deps, card);
        const msg: AgentCardMsg = { type: 'agentCard.acceptUpdate', orgId: p.orgId, source: latest, by: actorIdOf(p) };
        const reply = await deps.ask<AgentCardReply>(agentCardAddress(card.id), msg);
        return { body: { agentCard: view(reply), droppedOverlayKeys: reply.dropped } };
      },
    }),
  ];
}
