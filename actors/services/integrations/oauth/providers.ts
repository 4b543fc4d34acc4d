import type { Config } from '../../../../ops/kernel/config.js';

/**
 * The providers an org can connect through OAuth (authorization code + PKCE S256), and where their endpoints are.
 * Each provider's own hosts are the defaults; `TROUPE_<PROVIDER>_OAUTH_BASE_URL` replaces the scheme and host (and
 * any path prefix) of both endpoints, keeping the provider's paths, so one setting points a provider at a proxy,
 * an enterprise host or a fake provider on loopback. The scopes are the read access the resource palette
 * (repositories, issues) and the error-tracker lookup need, and the one write the tracker outbox makes: a comment on
 * an issue (Linear `comments:create`; GitHub's `repo` already covers it).
 */
export const oauthProviders = ['linear', 'github', 'sentry'] as const;
export type OAuthProvider = (typeof oauthProviders)[number];

export const isOAuthProvider = (value: string): value is OAuthProvider => (oauthProviders as readonly string[]).includes(value);

interface ProviderDefinition {
  readonly authorizeOrigin: string;
  readonly authorizePath: string;
  readonly tokenOrigin: string;
  readonly tokenPath: string;
  readonly scope: string;
}

const definitions: Record<OAuthProvider, ProviderDefinition> = {
  linear: { authorizeOrigin: 'https://linear.app', authorizePath: '/oauth/authorize', tokenOrigin: 'https://api.linear.app', tokenPath: '/oauth/token', scope: 'read,comments:create' },
  github: { authorizeOrigin: 'https://github.com', authorizePath: '/login/oauth/authorize', tokenOrigin: 'https://github.com', tokenPath: '/login/oauth/access_token', scope: 'repo read:org' },
  sentry: { authorizeOrigin: 'https://sentry.io', authorizePath: '/oauth/authorize/', tokenOrigin: 'https://sentry.io', tokenPath: '/oauth/token/', scope: 'org:read project:read event:read' },
};

export interface OAuthApp {
  readonly provider: OAuthProvider;
  readonly authorizeUrl: string;
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scope: string;
}

/** The provider's OAuth app as this deployment configured it; undefined when its client id or secret is missing. */
export function oauthAppFor(config: Config, provider: OAuthProvider): OAuthApp | undefined {
  const clientId = config[`${provider}OAuthClientId`];
  const clientSecret = config[`${provider}OAuthClientSecret`];
  if (!clientId || !clientSecret) return undefined;
  const base = config[`${provider}OAuthBaseUrl`]?.replace(/\/+$/, '');
  const d = definitions[provider];
  return {
    provider, clientId, clientSecret, scope: d.scope,
    authorizeUrl: `${base ?? d.authorizeOrigin}${d.authorizePath}`,
    tokenUrl: `${base ?? d.tokenOrigin}${d.tokenPath}`,
  };
}
