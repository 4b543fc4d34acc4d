import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { clientSecretPrefix, issueMachineToken, OAuthError } from '../../actors/services/integrations/m2m/client-credentials.js';
import { mintSecret } from '../../actors/services/identity/secrets-format.js';
import { appendAudit } from '../../storage/audit-log.js';
import { findOrg } from '../../storage/identity/orgs.js';
import { insertM2mClient } from '../../storage/integrations/m2m-clients.js';
import { findRequester } from '../../storage/integrations/requesters.js';
import { createM2mClientBody, m2mClientReply, tokenReply } from '../../schemas/integrations/oauth.js';
import type { HttpRequest, Reply, Route } from '../types.js';

/**
 * Machine clients (platform admin provisions them) and the OAuth token endpoint (decision 0014). The token route
 * answers in OAuth's own shapes (RFC 6749 §5.1, §5.2) and with `Cache-Control: no-store`, because OAuth client
 * libraries parse exactly those; its OpenAPI entry says so.
 */

/** Answers that carry a secret (a token, a client secret) must not be cached anywhere (RFC 6749 §5.1). */
export const noStore = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

function oauthErrorReply(err: OAuthError): Reply {
  return {
    status: err.status,
    body: { error: err.error, error_description: err.description },
    headers: err.error === 'invalid_client' ? { ...noStore, 'www-authenticate': 'Basic realm="troupe", charset="UTF-8"' } : noStore,
  };
}

interface CreateClientBody { orgId: string; name: string; scopes: Array<'read' | 'write' | 'admin'>; requesterId?: string }

const oauthErrorSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: { enum: ['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope'] },
    error_description: { type: 'string' },
  },
} as const satisfies Record<string, unknown>;

export function oauthRoutes(): Route<Deps>[] {
  return [
    {
      method: 'post', path: '/api/admin/m2m-clients', auth: 'admin', tags: ['admin', 'integrations'], successStatus: 201,
      summary: 'Provision an OAuth client_credentials client for an org, optionally bound to a requester; the secret is shown once',
      bodySchema: createM2mClientBody, responseSchema: m2mClientReply,
      async handler(req: HttpRequest<CreateClientBody>, deps) {
        const b = req.body;
        if (!(await findOrg(deps.db, b.orgId))) throw new TroupeError('NOT_FOUND', 'org not found');
        if (b.requesterId !== undefined && !(await findRequester(deps.db, b.orgId, b.requesterId))) {
          throw new TroupeError('VALIDATION_FAILED', 'requesterId: no such requester in this org', { field: 'requesterId' });
        }
        const secret = mintSecret(clientSecretPrefix);
        const at = new Date(deps.clock.now());
        const client = await insertM2mClient(deps.db, {
          id: randomUUID(), orgId: b.orgId, name: b.name.trim(), scopes: b.scopes, requesterId: b.requesterId ?? null,
          secretId: randomUUID(), secretHash: secret.hash, at,
        });
        await appendAudit(deps.db, {
          orgId: b.orgId, type: 'm2m_client.created', actor: 'admin', subject: client.id,
          payload: { scopes: client.scopes, requesterId: client.requesterId }, at,
        }).catch((err: unknown) => deps.log.warn({ err }, 'could not audit a machine client creation'));
        return {
          status: 201,
          headers: noStore,
          body: {
            clientId: client.id, clientSecret: secret.full, orgId: client.orgId, name: client.name, scopes: client.scopes,
            requesterId: client.requesterId, createdAt: client.createdAt,
          },
        };
      },
    },
    {
      method: 'post', path: '/api/oauth/token', auth: 'none', tags: ['integrations'], bodyKind: 'form', bodyLimit: 16 * 1024,
      summary: 'OAuth 2.0 client_credentials grant (RFC 6749 §4.4): form-urlencoded (canonical) or JSON; client auth by HTTP Basic or body; errors per RFC 6749 §5.2',
      responseSchema: tokenReply,
      // The grant's own failures follow RFC 6749 §5.2; refusals made by the edge before the handler (413, 415) do not.
      errorResponses: {
        '400': { description: 'invalid_request, invalid_grant, invalid_scope or unsupported_grant_type (RFC 6749 §5.2)', schema: oauthErrorSchema },
        '401': { description: 'invalid_client (RFC 6749 §5.2), with WWW-Authenticate', schema: oauthErrorSchema },
      },
      async handler(req, deps) {
        try {
          const token = await issueMachineToken(deps, deps.services.keys, { body: req.body, authorization: req.headers.authorization });
          return { body: token, headers: noStore };
        } catch (err) {
          if (err instanceof OAuthError) return oauthErrorReply(err);
          throw err;
        }
      },
    },
  ];
}
