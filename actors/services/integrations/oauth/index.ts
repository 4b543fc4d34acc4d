export { oauthProviders, isOAuthProvider, oauthAppFor, type OAuthProvider, type OAuthApp } from './providers.js';
export {
  beginAuthorization, completeAuthorization, connectionSealContext, hashState, AUTHORIZATION_STATE_TTL_MS,
  type AuthorizationStart, type ConnectionResult,
} from './flow.js';
export { exchangeAuthorizationCode, refreshAccessToken, TokenGrantRefused, type TokenResponse } from './token-exchange.js';
export {
  withConnectionToken, ConnectionUnusable, AccessTokenRejected, REFRESH_AHEAD_MS, type ConnectionProblem,
} from './connection-token.js';
