export { oauthProviders, isOAuthProvider, oauthAppFor, type OAuthProvider, type OAuthApp } from './providers.js';
export {
  beginAuthorization, completeAuthorization, connectionSealContext, hashState, AUTHORIZATION_STATE_TTL_MS,
  type AuthorizationStart, type ConnectionResult,
} from './flow.js';
export { exchangeAuthorizationCode, type TokenResponse } from './token-exchange.js';
