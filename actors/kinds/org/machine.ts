import { accept, reject } from '../../runtime/machine.js';
import { defineMachine, go, type Take } from '../../runtime/define-machine.js';
import type { ApiKeyMeta, RegistrationTokenMeta } from '../../../schemas/identity/org-actor.js';
export { type ApiKeyMeta, type RegistrationTokenMeta } from '../../../schemas/identity/org-actor.js';

/**
 * The org actor (`org/<orgId>`) owns the credentials an org hands out: API keys and daemon registration tokens.
 * Issue and revoke go through it so that each is decided once, in order, against the durable list; the
 * `api_keys` / `registration_tokens` tables are its read models.
 *
 * Each credential moves through one lifecycle, and the transition table below is over that lifecycle:
 * - absent:  never issued under this id.
 * - active:  issued; authenticates.
 * - revoked: revoked; never authenticates again. Revocation is final: there is no un-revoke.
 *
 * Secrets are minted by the caller before the message is sent (the message carries only the lookup prefix and
 * the SHA-256), so `decide` stays pure and a replayed message is recognised by its identical hash.
 */

export interface OrgState {
  readonly orgId: string;
  readonly apiKeys: Readonly<Record<string, ApiKeyMeta>>;
  readonly registrationTokens: Readonly<Record<string, RegistrationTokenMeta>>;
}

/** All messages are asks (the caller waits for the durable outcome). */
export type OrgMsg =
  | {
      readonly type: 'org.issueApiKey';
      readonly keyId: string;
      readonly name: string;
      readonly prefix: string;
      readonly hash: string;
      readonly scopes: readonly string[];
      readonly requesterId: string | null;
      readonly createdBy: string | null;
    }
  | { readonly type: 'org.revokeApiKey'; readonly keyId: string }
  | {
      readonly type: 'org.issueRegistrationToken';
      readonly tokenId: string;
      readonly name: string;
      readonly prefix: string;
      readonly hash: string;
      readonly projects: readonly string[];
    }
  | { readonly type: 'org.revokeRegistrationToken'; readonly tokenId: string };

export type OrgMsgType = OrgMsg['type'];
export const orgMsgTypes = ['org.issueApiKey', 'org.revokeApiKey', 'org.issueRegistrationToken', 'org.revokeRegistrationToken'] as const satisfies readonly OrgMsgType[];

export interface ApiKeyIssued {
  readonly id: string; readonly name: string; readonly prefix: string; readonly scopes: readonly string[];
  readonly requesterId: string | null; readonly createdAt: number;
}
export interface RegistrationTokenIssued { readonly id: string; readonly name: string; readonly projects: readonly string[]; readonly createdAt: number }
export interface CredentialRevoked { readonly id: string; readonly revokedAt: number; readonly alreadyRevoked: boolean }
export type OrgReply = ApiKeyIssued | RegistrationTokenIssued | CredentialRevoked;

export type OrgEffect =
  | { readonly type: 'apiKeyIssued'; readonly key: ApiKeyMeta }
  | { readonly type: 'apiKeyRevoked'; readonly keyId: string; readonly revokedAt: number }
  | { readonly type: 'registrationTokenIssued'; readonly token: RegistrationTokenMeta }
  | { readonly type: 'registrationTokenRevoked'; readonly tokenId: string; readonly revokedAt: number };

export const credentialStatuses = ['absent', 'active', 'revoked'] as const;
export type CredentialStatus = (typeof credentialStatuses)[number];

/**
 * Bounds the snapshot: revoked credentials stay in state (revocation must remain decidable), so the cap counts
 * them. An org that needs more rotates through fewer, longer-lived keys.
 */
export const MAX_CREDENTIALS_PER_KIND = 2000;

export const initialOrgState = (orgId: string): OrgState => ({ orgId, apiKeys: {}, registrationTokens: {} });

const statusOf = (item: { revokedAt: number | null } | undefined): CredentialStatus =>
  item === undefined ? 'absent' : item.revokedAt === null ? 'active' : 'revoked';

/** The credential a message names, and therefore the row of the table it is decided on. */
export function subjectStatus(state: OrgState, msg: OrgMsg): CredentialStatus {
  switch (msg.type) {
    case 'org.issueApiKey':
    case 'org.revokeApiKey':
      return statusOf(state.apiKeys[msg.keyId]);
    case 'org.issueRegistrationToken':
    case 'org.revokeRegistrationToken':
      return statusOf(state.registrationTokens[msg.tokenId]);
  }
}

const issuedKeyReply = (k: ApiKeyMeta): ApiKeyIssued =>
  ({ id: k.id, name: k.name, prefix: k.prefix, scopes: k.scopes, requesterId: k.requesterId, createdAt: k.createdAt });
const issuedTokenReply = (t: RegistrationTokenMeta): RegistrationTokenIssued =>
  ({ id: t.id, name: t.name, projects: t.projects, createdAt: t.createdAt });

type On<T extends OrgMsgType, To = CredentialStatus> =
  Take<OrgState, Extract<OrgMsg, { type: T }>, OrgEffect, OrgReply, CredentialStatus, To>;

const issueApiKey: On<'org.issueApiKey'> = (state, msg, ctx) => {
  if (Object.keys(state.apiKeys).length >= MAX_CREDENTIALS_PER_KIND) {
    return reject('CONFLICT', `an org holds at most ${MAX_CREDENTIALS_PER_KIND} api keys`);
  }
  const key: ApiKeyMeta = {
    id: msg.keyId, name: msg.name, prefix: msg.prefix, hash: msg.hash, scopes: [...msg.scopes],
    requesterId: msg.requesterId, createdBy: msg.createdBy, createdAt: ctx.now, revokedAt: null,
  };
  return accept({ ...state, apiKeys: { ...state.apiKeys, [key.id]: key } }, issuedKeyReply(key), [{ type: 'apiKeyIssued', key }]);
};

/** An issue replayed with the very same secret (a retried request) answers the key; anything else is a collision. */
const replayApiKey: On<'org.issueApiKey'> = (state, msg) => {
  const existing = state.apiKeys[msg.keyId]!;
  return existing.hash === msg.hash
    ? accept(state, issuedKeyReply(existing))
    : reject('ALREADY_EXISTS', 'an api key with this id already exists');
};

const revokeApiKey: On<'org.revokeApiKey'> = (state, msg, ctx) => {
  const revoked: ApiKeyMeta = { ...state.apiKeys[msg.keyId]!, revokedAt: ctx.now };
  return accept(
    { ...state, apiKeys: { ...state.apiKeys, [revoked.id]: revoked } },
    { id: revoked.id, revokedAt: ctx.now, alreadyRevoked: false },
    [{ type: 'apiKeyRevoked', keyId: revoked.id, revokedAt: ctx.now }],
  );
};

const issueRegistrationToken: On<'org.issueRegistrationToken'> = (state, msg, ctx) => {
  if (Object.keys(state.registrationTokens).length >= MAX_CREDENTIALS_PER_KIND) {
    return reject('CONFLICT', `an org holds at most ${MAX_CREDENTIALS_PER_KIND} registration tokens`);
  }
  const token: RegistrationTokenMeta = {
    id: msg.tokenId, name: msg.name, prefix: msg.prefix, hash: msg.hash, projects: [...msg.projects],
    createdAt: ctx.now, revokedAt: null,
  };
  return accept(
    { ...state, registrationTokens: { ...state.registrationTokens, [token.id]: token } },
    issuedTokenReply(token),
    [{ type: 'registrationTokenIssued', token }],
  );
};

const replayRegistrationToken: On<'org.issueRegistrationToken'> = (state, msg) => {
  const existing = state.registrationTokens[msg.tokenId]!;
  return existing.hash === msg.hash
    ? accept(state, issuedTokenReply(existing))
    : reject('ALREADY_EXISTS', 'a registration token with this id already exists');
};

const revokeRegistrationToken: On<'org.revokeRegistrationToken'> = (state, msg, ctx) => {
  const revoked: RegistrationTokenMeta = { ...state.registrationTokens[msg.tokenId]!, revokedAt: ctx.now };
  return accept(
    { ...state, registrationTokens: { ...state.registrationTokens, [revoked.id]: revoked } },
    { id: revoked.id, revokedAt: ctx.now, alreadyRevoked: false },
    [{ type: 'registrationTokenRevoked', tokenId: revoked.id, revokedAt: ctx.now }],
  );
};

/** Revocation is final and idempotent: revoking again answers when it happened. */
const alreadyRevoked: On<'org.revokeApiKey' | 'org.revokeRegistrationToken'> = (state, msg) => {
  const existing = msg.type === 'org.revokeApiKey' ? state.apiKeys[msg.keyId]! : state.registrationTokens[msg.tokenId]!;
  return accept(state, { id: existing.id, revokedAt: existing.revokedAt!, alreadyRevoked: true });
};

/**
 * What each message may do to the credential it names. Issue on an existing credential is only accepted as a
 * replay of the very same issue (same hash); revoke of a revoked credential is an idempotent success.
 */
export const orgMachine = defineMachine<OrgState, OrgMsg, OrgEffect, OrgReply, CredentialStatus>({
  statuses: credentialStatuses,
  messageTypes: orgMsgTypes,
  statusOf: subjectStatus,
  refuse: (_from, msg) => reject('NOT_FOUND', msg.type.endsWith('ApiKey') ? 'api key not found' : 'registration token not found'),
  table: {
    absent: { 'org.issueApiKey': go('active', issueApiKey), 'org.issueRegistrationToken': go('active', issueRegistrationToken) },
    active: {
      'org.issueApiKey': go('active', replayApiKey),
      'org.issueRegistrationToken': go('active', replayRegistrationToken),
      'org.revokeApiKey': go('revoked', revokeApiKey),
      'org.revokeRegistrationToken': go('revoked', revokeRegistrationToken),
    },
    revoked: {
      'org.issueApiKey': go('revoked', replayApiKey),
      'org.issueRegistrationToken': go('revoked', replayRegistrationToken),
      'org.revokeApiKey': go('revoked', alreadyRevoked),
      'org.revokeRegistrationToken': go('revoked', alreadyRevoked),
    },
  },
});

