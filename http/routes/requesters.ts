import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { decodeStrictBase64, ed25519PublicKey } from '../../actors/services/integrations/requesters/signed-dispatch.js';
import { assertOwnOrg, orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import { listRequesters, registerRequester, type RequesterRecord } from '../../storage/integrations/requesters.js';
import { createRequesterBody, requesterListReply, requesterReply } from '../../schemas/integrations/requesters.js';
import type { Route, RouteAuthorization } from '../types.js';

/**
 * Requester registrations for signed agent dispatch (spec 5.5; decision 0014). Managing them is managing
 * credentials (`manage-keys`: admins and owners, admin-scoped keys); API keys and machine clients are bound to one
 * by `requesterId` when they are issued. A path orgId other than the caller's is 403 TENANT_MISMATCH.
 */
/** `action` on the caller's org, once the path's `:orgId` is shown to be it. */
const onOwnOrg = (action: 'manage-keys' | 'read'): RouteAuthorization<Deps> => ({
  find: async (req, _deps, p) => assertOwnOrg(req, p),
  action,
  resource: (_req, p) => ({ type: 'Org', id: p.orgId, orgId: p.orgId }),
});

const view = (r: RequesterRecord) => ({ id: r.id, orgId: r.orgId, name: r.name, mode: r.mode, publicKey: r.publicKey, createdAt: r.createdAt });

/** The key as stored: strict standard base64 of 32 bytes that Node accepts as an Ed25519 public key. */
function checkedPublicKey(text: string): string {
  const raw = decodeStrictBase64(text, 32);
  if (raw) {
    try {
      ed25519PublicKey(raw);
      return text;
    } catch { /* falls through to the refusal */ }
  }
  throw new TroupeError('VALIDATION_FAILED', 'publicKey: must be standard base64 of a raw 32-byte Ed25519 public key', { field: 'publicKey' });
}

export function requesterRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/org/:orgId/requesters', auth: 'org', tags: ['integrations', 'sessions'], successStatus: 201,
      summary: 'Register a requester for signed agent dispatch: light or strict, with an optional Ed25519 public key (admin/owner)',
      bodySchema: createRequesterBody, responseSchema: requesterReply,
      authorize: onOwnOrg('manage-keys'),
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const publicKey = req.body.publicKey === undefined ? null : checkedPublicKey(req.body.publicKey);
        const at = new Date(deps.clock.now());
        const created = await registerRequester(deps.db, {
          id: randomUUID(), orgId: p.orgId, name: req.body.name.trim(), mode: req.body.mode, publicKey, createdBy: requesterOf(p), at,
        }, (row) => ({
          orgId: p.orgId, type: 'requester.registered', actor: requesterOf(p), subject: row.id,
          payload: { mode: row.mode, hasPublicKey: publicKey !== null }, at,
        }));
        if (!created) throw new TroupeError('ALREADY_EXISTS', 'a requester with this name exists', { field: 'name' });
        return { status: 201, body: { requester: view(created) } };
      },
    }),
    route({
      method: 'get', path: '/api/org/:orgId/requesters', auth: 'org', tags: ['integrations', 'sessions'],
      summary: "The org's requester registrations",
      responseSchema: requesterListReply,
      authorize: onOwnOrg('read'),
      async handler(req, deps) {
        const p = orgPrincipal(req);
        return { body: { requesters: (await listRequesters(deps.db, p.orgId)).map(view) } };
      },
    }),
  ];
}
