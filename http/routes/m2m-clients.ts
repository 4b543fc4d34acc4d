import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { clientSecretPrefix } from '../../actors/services/integrations/m2m/client-credentials.js';
import { tags } from '../../actors/services/identity/revocation.js';
import { announceRevocation } from './announce-revocation.js';
import { noStore } from './oauth.js';
import { mintSecret } from '../../actors/services/identity/secrets-format.js';
import { findOrg } from '../../storage/identity/orgs.js';
import {
  findM2mClient, listM2mClients, revokeM2mClient, rotateM2mClient, type M2mClientDetail,
} from '../../storage/integrations/m2m-clients.js';
import {
  DEFAULT_ROTATION_OVERLAP_SECONDS, listM2mClientsQuery, m2mClientDetail, m2mClientList, revokeM2mClientReply, rotateM2mClientBody,
  rotateM2mClientReply,
} from '../../schemas/integrations/oauth.js';
import type { HttpRequest, Reply, Route } from '../types.js';
import type { BodyOf } from '../route.js';

/**
 * Operating machine clients (platform admin; decision 0017): rotate a secret with an overlap, revoke a client, and
 * read clients back without any secret or hash. Provisioning and the token endpoint are in oauth.ts.
 *
 * Rotation ends old secrets, not tokens already issued with them: those were obtained legitimately and expire
 * within the hour. Revocation ends both, on every node, before it answers on this one.
 */

const notFound = () => new TroupeError('NOT_FOUND', 'machine client not found');

function clientView(client: M2mClientDetail, now: number) {
  return {
    clientId: client.id, orgId: client.orgId, name: client.name, scopes: client.scopes, requesterId: client.requesterId,
    createdAt: client.createdAt, revokedAt: client.revokedAt,
    secrets: client.secrets.map((s) => ({
      id: s.id, createdAt: s.createdAt, expiresAt: s.expiresAt, active: s.expiresAt === null || Date.parse(s.expiresAt) > now,
    })),
  };
}

export async function rotateClientSecret(req: HttpRequest<BodyOf<typeof rotateM2mClientBody>>, deps: Deps): Promise<Reply> {
  const clientId = req.params.clientId ?? '';
  const overlapSeconds = req.body.overlapSeconds ?? DEFAULT_ROTATION_OVERLAP_SECONDS;
  const at = new Date(deps.clock.now());
  const previousExpireAt = new Date(at.getTime() + overlapSeconds * 1000);
  const secret = mintSecret(clientSecretPrefix);
  const secretId = randomUUID();
  const outcome = await rotateM2mClient(deps.db, { clientId, secretId, secretHash: secret.hash, at, previousExpireAt }, (client) => ({
    orgId: client.orgId, type: 'm2m_client.secret_rotated', actor: 'admin', subject: clientId,
    payload: { secretId, overlapSeconds, previousSecretsExpireAt: previousExpireAt.toISOString() }, at,
  }));
  if (outcome.kind === 'absent') throw notFound();
  if (outcome.kind === 'revoked') throw new TroupeError('CONFLICT', 'machine client is revoked; provision a new one');
  return {
    headers: noStore,
    body: { clientId, clientSecret: secret.full, previousSecretsExpireAt: previousExpireAt.toISOString() },
  };
}

export async function revokeClient(req: HttpRequest, deps: Deps): Promise<Reply> {
  const clientId = req.params.clientId ?? '';
  const at = new Date(deps.clock.now());
  const result = await revokeM2mClient(deps.db, clientId, at);
  if (!result) throw notFound();
  // Announced on a repeat too: it costs nothing and covers a first call whose publication failed.
  await announceRevocation(deps, [tags.machineClient(clientId)]);
  return { body: { clientId, revoked: true, revokedAt: result.client.revokedAt } };
}

export async function getClient(req: HttpRequest, deps: Deps): Promise<Reply> {
  const client = await findM2mClient(deps.db, req.params.clientId ?? '');
  if (!client) throw notFound();
  return { body: clientView(client, deps.clock.now()) };
}

export async function listClients(req: HttpRequest, deps: Deps): Promise<Reply> {
  const orgId = req.query.get('orgId') ?? '';
  if (!(await findOrg(deps.db, orgId))) throw new TroupeError('NOT_FOUND', 'org not found');
  const now = deps.clock.now();
  return { body: { clients: (await listM2mClients(deps.db, orgId)).map((c) => clientView(c, now)) } };
}

export function m2mClientRoutes(): Route<Deps>[] {
  return [
    {
      method: 'get', path: '/api/admin/m2m-clients', auth: 'admin', tags: ['admin', 'integrations'],
      summary: 'List the machine clients of an org (orgId required), oldest first, with each secret\'s creation and expiry; never a secret or hash',
      querySchema: listM2mClientsQuery, responseSchema: m2mClientList, handler: listClients,
    },
    {
      method: 'get', path: '/api/admin/m2m-clients/:clientId', auth: 'admin', tags: ['admin', 'integrations'],
      summary: 'One machine client: scopes, requester, revokedAt, and each secret\'s creation, expiry and whether it works now; 404 if unknown',
      responseSchema: m2mClientDetail, handler: getClient,
    },
    {
      method: 'post', path: '/api/admin/m2m-clients/:clientId/rotate', auth: 'admin', tags: ['admin', 'integrations'],
      summary: 'Add a client secret (shown once) and end every older one after overlapSeconds (default 86400, 0 = at once; an earlier '
        + 'expiry stands); both work at the token endpoint meanwhile. Issued tokens are untouched. 404 if unknown, 409 if revoked',
      bodySchema: rotateM2mClientBody, responseSchema: rotateM2mClientReply, handler: rotateClientSecret,
    },
    {
      method: 'delete', path: '/api/admin/m2m-clients/:clientId', auth: 'admin', tags: ['admin', 'integrations'],
      summary: 'Revoke a machine client: the token endpoint refuses it and its issued tokens stop working on every node; '
        + 'revoking again answers 200 with the first revokedAt. 404 if unknown',
      responseSchema: revokeM2mClientReply, handler: revokeClient,
    },
  ];
}
