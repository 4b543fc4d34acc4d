import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { beginAuthorization, completeAuthorization, isOAuthProvider, type OAuthProvider } from '../../actors/services/integrations/oauth/index.js';
import type { HttpRequest, Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';

/**
 * Integration OAuth (CONTRACT "Integration OAuth"). Both ends take a human credential (session cookie or user
 * token), because the state is bound to the user who started the connection and the callback must come from that
 * same user's browser; both check manage-credentials (admin, owner) — again at the callback, since a role can be
 * withdrawn while the user is away at the provider. The redirect URI is `TROUPE_PUBLIC_URL` + the callback path.
 */
const authorizeReply = {
  type: 'object', required: ['authorizeUrl', 'state', 'expiresAt'], additionalProperties: false,
  properties: { authorizeUrl: { type: 'string' }, state: { type: 'string' }, expiresAt: { type: 'string', format: 'date-time' } },
} as const;

const callbackQuery = {
  type: 'object', required: ['state'],
  // Providers may add parameters of their own (RFC 9207 `iss`, `error_uri`…); only these are read.
  properties: {
    state: { type: 'string', minLength: 1, maxLength: 128 },
    code: { type: 'string', minLength: 1, maxLength: 2048 },
    error: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
  },
} as const;

const callbackReply = {
  type: 'object', required: ['provider', 'connected', 'scope', 'expiresAt', 'connectedAt'], additionalProperties: false,
  properties: {
    provider: { type: 'string' }, connected: { const: true }, scope: { type: ['string', 'null'] },
    expiresAt: { type: ['string', 'null'] }, connectedAt: { type: 'string', format: 'date-time' },
  },
} as const;

interface ConnectingUser { readonly orgId: string; readonly userId: string; readonly provider: OAuthProvider }

/** The user connecting, and a provider we know (404 otherwise); manage-credentials on that provider's integration. */
const connectingUser: RouteAuthorization<Deps, any, ConnectingUser> = {
  async find(req, _deps, p: Principal) {
    if (p.kind !== 'user') throw new TroupeError('AUTH_HUMAN_ONLY', 'an integration is connected by a user');
    const provider = req.params.provider ?? '';
    if (!isOAuthProvider(provider)) throw new TroupeError('NOT_FOUND', 'unknown OAuth provider');
    return { orgId: p.orgId, userId: p.userId, provider };
  },
  action: 'manage-credentials',
  resource: (_req, _p, who) => ({ type: 'Integration', id: who.provider, orgId: who.orgId }),
};

/** A browser's page load, not a script's call; browsers send no Sec-Fetch headers to a plain-http origin other than loopback. */
function isNavigation(req: HttpRequest): boolean {
  const mode = req.headers['sec-fetch-mode'];
  return mode === undefined ? (req.headers.accept ?? '').includes('text/html') : mode === 'navigate';
}

/** The console's integrations page (a relative Location: the browser stays on the address it reached us at). */
function backToConsole(query: Record<string, string>) {
  return { status: 303, headers: { location: `/settings/integrations?${new URLSearchParams(query).toString()}` }, body: {} };
}

function redirectUriFor(req: HttpRequest, deps: Deps, provider: OAuthProvider): string {
  const path = `/api/integrations/${provider}/oauth/callback`;
  if (deps.config.publicUrl) return `${deps.config.publicUrl}${path}`;
  // Without a configured public address the Host header is the only guess; it is checked to be a bare host[:port],
  // and the provider compares the redirect URI with the app's registered one anyway.
  const host = req.headers.host ?? '';
  if (!/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253})(:\d{1,5})?$/.test(host)) {
    throw new TroupeError('VALIDATION_FAILED', 'Host header is not a host name; set TROUPE_PUBLIC_URL', { field: 'host' });
  }
  return `${deps.config.behindTls ? 'https' : 'http'}://${host}${path}`;
}

export function integrationOAuthRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/integrations/:provider/oauth/authorize', auth: 'human', tags: ['integrations'],
      summary: 'Start connecting a provider (linear, github, sentry) over OAuth with PKCE: the URL to send the browser to, and its single-use state (admin/owner)',
      responseSchema: authorizeReply,
      authorize: connectingUser,
      async handler(req, deps, { found: who }) {
        return { body: await beginAuthorization(deps, { ...who, redirectUri: redirectUriFor(req, deps, who.provider) }) };
      },
    }),
    route({
      method: 'get', path: '/api/integrations/:provider/oauth/callback', auth: 'human', tags: ['integrations'],
      summary: "Finish a provider connection: the state must be this user's, unused and unexpired; the code is exchanged at the provider's token endpoint and the tokens stored encrypted",
      querySchema: callbackQuery, responseSchema: callbackReply,
      authorize: connectingUser,
      description: 'A browser arriving from the provider (a navigation: `Sec-Fetch-Mode: navigate`, or without Sec-Fetch headers, `Accept` naming text/html) is answered 303 to the console\'s '
        + 'integrations page instead, with `connected={provider}` or `provider={provider}&error={what went wrong}` in its query, so the '
        + 'person lands back where they started; any other client gets this JSON or the error.',
      async handler(req, deps, { found: who }) {
        const finish = () => completeAuthorization(deps, {
          ...who, state: req.query.get('state') ?? '', code: req.query.get('code') ?? undefined, providerError: req.query.get('error') ?? undefined,
        });
        if (!isNavigation(req)) return { body: await finish() };
        return finish().then(
          (done) => backToConsole({ connected: done.provider }),
          (err: unknown) => {
            if (!(err instanceof TroupeError)) throw err;
            return backToConsole({ provider: who.provider, error: err.message });
          },
        );
      },
    }),
  ];
}
