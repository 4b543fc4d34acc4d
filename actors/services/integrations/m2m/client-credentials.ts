import type { Deps } from '../../deps.js';
import { hashesEqual, sha256Hex } from '../../identity/secrets-format.js';
import { MACHINE_TOKEN_TTL_SECONDS, signToken, type SigningKeys } from '../../identity/tokens.js';
import { clientForAuthentication } from '../../../../storage/integrations/m2m-clients.js';

/**
 * The OAuth 2.0 client_credentials grant (RFC 6749 §4.4) for machine clients (decision 0014).
 *
 * Client authentication (§2.3.1): HTTP Basic with the form-urlencoded client id and secret, or `client_id` and
 * `client_secret` in the body — one method only. The secret is compared, as a SHA-256, in constant time with every
 * secret of the client still valid (two overlap during a rotation); an unknown client costs the same comparison.
 * Errors are RFC 6749 §5.2 bodies `{error, error_description}` (not Troupe's `{error, code}`): `invalid_request`
 * 400, `invalid_client` 401 with `WWW-Authenticate: Basic`, `unsupported_grant_type` 400, `invalid_scope` 400.
 * `invalid_grant` never arises here: this grant carries nothing but the client's own credentials.
 * The token is a machine JWT (`typ: machine`, claims cid/org/scope/rqid, 1 h) that the authenticator accepts.
 */
export const MACHINE_SCOPES = ['read', 'write', 'admin'] as const;
export const clientSecretPrefix = 'trs_';

export type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unauthorized_client' | 'unsupported_grant_type' | 'invalid_scope';

export class OAuthError extends Error {
  constructor(readonly error: OAuthErrorCode, readonly description: string) {
    super(description);
    this.name = 'OAuthError';
  }

  get status(): number { return this.error === 'invalid_client' ? 401 : 400; }
}

export interface TokenResponse {
  readonly access_token: string;
  readonly token_type: 'Bearer';
  readonly expires_in: number;
  readonly scope: string;
}

export interface TokenRequest {
  /** The parsed body (form fields or a JSON object). */
  readonly body: unknown;
  readonly authorization: string | undefined;
}

/** A stand-in hash compared when the client is unknown, so that case takes as long as a wrong secret. */
const DECOY_HASH = sha256Hex('troupe:oauth:decoy');

type TokenDeps = Pick<Deps, 'db' | 'clock'>;

export async function issueMachineToken(deps: TokenDeps, keys: SigningKeys, req: TokenRequest): Promise<TokenResponse> {
  const fields = bodyFields(req.body);
  const credentials = clientCredentials(req.authorization, fields);
  const grantType = fields.grant_type;
  if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is required');

  const found = await clientForAuthentication(deps.db, credentials.clientId, new Date(deps.clock.now()));
  const presented = sha256Hex(credentials.clientSecret);
  let matched = false;
  for (const hash of found?.secretHashes.length ? found.secretHashes : [DECOY_HASH]) if (hashesEqual(hash, presented)) matched = true;
  if (!found || !matched || found.client.revokedAt !== null) throw new OAuthError('invalid_client', 'client authentication failed');

  // Checked after client authentication, as RFC 6749 §5.2 orders them: an unauthenticated caller learns nothing.
  if (grantType !== 'client_credentials') throw new OAuthError('unsupported_grant_type', 'only client_credentials is supported');
  const granted = grantedScopes(fields.scope, found.client.scopes);

  const { client } = found;
  const claims = client.requesterId === null
    ? { cid: client.id, org: client.orgId, scope: granted }
    : { cid: client.id, org: client.orgId, scope: granted, rqid: client.requesterId };
  const issued = await signToken(keys, deps.clock, 'machine', claims, MACHINE_TOKEN_TTL_SECONDS);
  return { access_token: issued.token, token_type: 'Bearer', expires_in: MACHINE_TOKEN_TTL_SECONDS, scope: granted.join(' ') };
}

function bodyFields(body: unknown): Record<string, string | undefined> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new OAuthError('invalid_request', 'the body must be form fields or a JSON object');
  const fields: Record<string, string | undefined> = {};
  for (const name of ['grant_type', 'scope', 'client_id', 'client_secret'] as const) {
    const value = (body as Record<string, unknown>)[name];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value.length > 4096) throw new OAuthError('invalid_request', `${name} must be a string`);
    fields[name] = value;
  }
  return fields;
}

function clientCredentials(authorization: string | undefined, fields: Record<string, string | undefined>): { clientId: string; clientSecret: string } {
  const inBody = fields.client_id !== undefined || fields.client_secret !== undefined;
  if (authorization !== undefined && authorization !== '') {
    if (inBody) throw new OAuthError('invalid_request', 'use one client authentication method, not two');
    const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(authorization);
    if (!match) throw new OAuthError('invalid_client', 'client authentication failed');
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new OAuthError('invalid_client', 'client authentication failed');
    try {
      // RFC 6749 §2.3.1: both halves are form-urlencoded before they are joined.
      return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
    } catch {
      throw new OAuthError('invalid_client', 'client authentication failed');
    }
  }
  if (fields.client_id === undefined || fields.client_secret === undefined) {
    throw new OAuthError('invalid_client', 'client authentication is required (HTTP Basic or client_id and client_secret)');
  }
  return { clientId: fields.client_id, clientSecret: fields.client_secret };
}

const formDecode = (s: string): string => decodeURIComponent(s.replace(/\+/g, ' '));

/** The requested scopes (space-delimited, RFC 6749 §3.3) if the client holds them all; all of its scopes when none asked. */
function grantedScopes(requested: string | undefined, held: readonly string[]): string[] {
  if (requested === undefined || requested.trim() === '') return [...held];
  const asked = [...new Set(requested.split(' ').filter((s) => s !== ''))];
  if (asked.some((s) => !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s))) throw new OAuthError('invalid_scope', 'malformed scope');
  const missing = asked.filter((s) => !held.includes(s));
  if (missing.length > 0) throw new OAuthError('invalid_scope', 'the client does not hold every requested scope');
  return asked;
}
