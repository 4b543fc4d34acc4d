import type { Knex } from 'knex';
import type { Clock } from '../../../ops/kernel/clock.js';
import type { Logger } from '../../../ops/kernel/logger.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import type { Transport, Unsubscribe } from '../../../transport/port.js';
import { apiKeysByPrefix, registrationIsLive, workerProjects } from '../../../storage/identity/credentials.js';
import { orgRoleOf } from '../../../storage/identity/orgs.js';
import { machineClientIsLive } from '../../../storage/integrations/m2m-clients.js';
import { userTokenRevoked } from '../../../storage/identity/revoked-user-tokens.js';
import type { Authenticator } from './ports.js';
import type { Principal } from './principal.js';
import { RevocableMemo } from './memo.js';
import { apiKeyPrefix, hashesEqual, parseSecret } from './secrets-format.js';
import { looksLikeJwt, userTokenId, verifyTokenSync, type SigningKeys, type VerifiedToken } from './tokens.js';
import { parseRevocation, revocationTags, REVOCATION_TOPIC, tags } from './revocation.js';

/**
 * Resolves the credential a request carries into a Principal.
 *
 * - `Authorization: Bearer trp_…` → the org API key it hashes to (not revoked).
 * - `Authorization: Bearer <JWT>` → by its `typ`: `user` (role read from org_memberships), `runtime`, `machine`.
 * - no Authorization, cookie `troupe_session=<user JWT>` → that user, `via: 'cookie'`.
 * Anything else that is presented (another scheme, a malformed or expired token, an unknown or revoked key, a
 * user no longer in the org, a user token ended by logout) is AUTH_INVALID; nothing presented at all is `undefined`.
 *
 * Hot path: a verified credential is memoised until min(its expiry, `memoTtlMs`), so a repeat request costs one
 * map lookup. When that entry lapses, what is re-checked is what can have changed: expiry (against the clock), the
 * membership of a user and that logout has not ended the user's token (two queries, run together), the liveness of
 * the token's issuer: a runtime token's registration or a machine token's client (`issuerLive`, memoised per issuer
 * under the same revocation tags and TTL, so 10,000 workers of one registration cost one query a minute). The
 * signature is a fixed property of the token's bytes under fixed keys: a token verified once is not re-verified
 * until it expires (`verifiedTokens`), and a first sight costs one synchronous Ed25519 verify (PERFORMANCE.md G8). Revocation (a key revoked, a membership changed) ends memo entries at once on this node through
 * `invalidate`, and on every other node through the `identity.revoked` topic; `memoTtlMs` bounds how long a node
 * that missed an event (broker outage) can lag. See ops/decisions/0006-identity-and-authorization.md.
 */
export interface AuthenticatorOptions {
  readonly db: Knex;
  readonly keys: SigningKeys;
  readonly clock: Clock;
  /** Subscribed to `identity.revoked`; omit only in unit tests of a single node. */
  readonly transport?: Transport;
  readonly log?: Logger;
  /**
   * Entries in each memo. It must exceed the number of credentials in steady use: a fleet rotating through more
   * tokens than this would miss on every request (LRU under round-robin). @default 100000
   */
  readonly memoEntries?: number;
  /** Upper bound on how long a verified credential is trusted without a lookup. @default 60000 */
  readonly memoTtlMs?: number;
}

export interface IdentityAuthenticator extends Authenticator {
  /** Resolves once the revocation subscription is in place (cross-node revocation is then live). */
  readonly ready: Promise<void>;
  invalidate(tags: readonly string[]): void;
  /**
   * The caller's profile (org, user, projects: what whoami answers), memoised per principal under the same
   * revocation tags and TTL as the credential itself, so the hot read path costs no database round trip.
   */
  contextOf<T>(principal: Principal, load: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export const SESSION_COOKIE = 'troupe_session';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createAuthenticator(options: AuthenticatorOptions): IdentityAuthenticator {
  return new CredentialAuthenticator(options);
}

class CredentialAuthenticator implements IdentityAuthenticator {
  readonly ready: Promise<void>;
  private readonly memo: RevocableMemo<Principal>;
  private readonly contexts: RevocableMemo<unknown>;
  /**
   * Issuers of tokens (a daemon registration, a machine client) known to be live: `<issuer tag>:<org>` → true,
   * under the issuer's and the org's revocation tags.
   */
  private readonly liveIssuers: RevocableMemo<true>;
  /** Tokens whose signature and claims verified, until their expiry; oldest dropped first when full. */
  private readonly verifiedTokens = new Map<string, VerifiedToken<'user' | 'runtime' | 'machine'>>();
  private readonly maxEntries: number;
  private readonly memoTtlMs: number;
  private readonly log: Logger;
  private unsubscribe: Unsubscribe | undefined;

  constructor(private readonly options: AuthenticatorOptions) {
    this.maxEntries = options.memoEntries ?? 100_000;
    this.memo = new RevocableMemo(this.maxEntries, 10_000);
    this.contexts = new RevocableMemo(this.maxEntries, 10_000);
    this.liveIssuers = new RevocableMemo(this.maxEntries, 10_000);
    this.memoTtlMs = options.memoTtlMs ?? 60_000;
    this.log = options.log ?? silentLogger();
    this.ready = options.transport
      ? options.transport.subscribe(REVOCATION_TOPIC, (_topic, event) => this.onRevocation(event)).then((u) => { this.unsubscribe = u; })
      : Promise.resolve();
    // A failed subscription is logged and surfaced through `ready`; requests still authenticate (with the TTL bound).
    this.ready.catch((err: unknown) => this.log.error({ err }, 'identity revocation subscription failed'));
  }

  async resolve(credentials: { authorization?: string | undefined; cookie?: string | undefined }): Promise<Principal | undefined> {
    const { authorization, cookie } = credentials;
    if (authorization !== undefined && authorization !== '') {
      // A JWT's memo entry is keyed by the exact header it came in, so a repeat (every heartbeat) is one lookup,
      // before any parsing; expiry and revocation are checked by the memo as on every other hit.
      const hit = this.resolveMemoised(authorization);
      if (hit !== undefined) return hit;
      const match = /^Bearer +(\S+) *$/i.exec(authorization);
      if (!match) throw new TroupeError('AUTH_INVALID', 'Authorization must be "Bearer <token>"');
      return this.fromBearer(match[1]!, authorization);
    }
    const session = cookie === undefined ? undefined : readCookie(cookie, SESSION_COOKIE);
    if (session === undefined) return undefined;
    if (!looksLikeJwt(session)) throw new TroupeError('AUTH_INVALID');
    return this.memoised(`c:${session}`, () => this.fromUserJwt(session, 'cookie'));
  }

  resolveMemoised(authorization: string): Principal | undefined {
    // Only a header that starts with the scheme is looked up: other memo keys (`k:<hash>`, `c:<jwt>`) must never be
    // reachable by sending them as a header.
    return authorization.startsWith('Bearer ') ? this.memo.get(authorization, this.options.clock.now()) : undefined;
  }

  invalidate(tags: readonly string[]): void {
    this.memo.revoke(tags);
    this.contexts.revoke(tags);
    this.liveIssuers.revoke(tags);
  }

  async contextOf<T>(principal: Principal, load: () => Promise<T>): Promise<T> {
    const key = principalKey(principal);
    const now = this.options.clock.now();
    const hit = this.contexts.get(key, now);
    if (hit !== undefined) return hit as T;
    const startedAt = this.contexts.begin();
    const value = await load();
    this.contexts.set(key, value, now + this.memoTtlMs, revocationTags(principal), startedAt);
    return value;
  }

  async close(): Promise<void> {
    await this.ready.catch(() => undefined);
    await this.unsubscribe?.();
    this.memo.clear();
    this.contexts.clear();
    this.liveIssuers.clear();
    this.verifiedTokens.clear();
  }

  /** `header` is the Authorization value as sent: JWT entries are keyed by it (API keys by their hash). */
  private fromBearer(token: string, header: string): Promise<Principal> {
    if (token.startsWith(apiKeyPrefix)) {
      const parsed = parseSecret(apiKeyPrefix, token);
      if (!parsed) return Promise.reject(new TroupeError('AUTH_INVALID'));
      return this.memoised(`k:${parsed.hash}`, () => this.fromApiKey(parsed.lookupPrefix, parsed.hash));
    }
    if (!looksLikeJwt(token)) return Promise.reject(new TroupeError('AUTH_INVALID'));
    // Keyed by the header only in its canonical form (the fast path looks nowhere else); variants by the token.
    return this.memoised(header.startsWith('Bearer ') ? header : `t:${token}`, () => this.fromJwt(token));
  }

  private async memoised(key: string, lookup: () => Promise<Resolved>): Promise<Principal> {
    const now = this.options.clock.now();
    const hit = this.memo.get(key, now);
    if (hit) return hit;
    const startedAt = this.memo.begin();
    const { principal, expiresAt, sessionTag } = await lookup();
    const revokedBy = revocationTags(principal);
    if (sessionTag !== undefined) revokedBy.push(sessionTag);
    this.memo.set(key, principal, Math.min(expiresAt, now + this.memoTtlMs), revokedBy, startedAt);
    return principal;
  }

  private async fromApiKey(lookupPrefix: string, hash: string): Promise<Resolved> {
    const candidates = await apiKeysByPrefix(this.options.db, lookupPrefix);
    // Compare against every candidate, so the time taken does not depend on which one (if any) matches.
    let found: (typeof candidates)[number] | undefined;
    for (const candidate of candidates) if (hashesEqual(candidate.hash, hash)) found = candidate;
    if (!found || found.revokedAt !== null) throw new TroupeError('AUTH_INVALID');
    const principal: Principal = found.requesterId === null
      ? { kind: 'apiKey', keyId: found.id, orgId: found.orgId, scopes: found.scopes }
      : { kind: 'apiKey', keyId: found.id, orgId: found.orgId, scopes: found.scopes, requesterId: found.requesterId };
    return { principal, expiresAt: Number.POSITIVE_INFINITY };
  }

  /**
   * Signature, issuer, algorithm and claims, checked synchronously by node:crypto the first time a token is seen;
   * afterwards only its expiry, which is the one part of that verdict that changes with time.
   */
  private verified<T extends 'user' | 'runtime' | 'machine'>(token: string, accept: readonly T[]): VerifiedToken<T> {
    const now = this.options.clock.now();
    const known = this.verifiedTokens.get(token);
    if (known !== undefined) {
      if (known.expiresAt <= now) this.verifiedTokens.delete(token);
      else if ((accept as readonly string[]).includes(known.typ)) return known as VerifiedToken<T>;
      else throw new TroupeError('AUTH_INVALID');
    }
    const fresh = verifyTokenSync(this.options.keys, this.options.clock, token, accept);
    if (this.verifiedTokens.size >= this.maxEntries) {
      this.verifiedTokens.delete(this.verifiedTokens.keys().next().value as string);
    }
    this.verifiedTokens.set(token, fresh);
    return fresh;
  }

  /**
   * Whether the issuer of a token (its registration or machine client, named by its revocation tag) still admits
   * it: one query per issuer per `memoTtlMs` at most, so 10,000 workers of one registration cost one query a minute.
   * Only liveness is memoised: a refusal is the rare case, and asking again keeps it exact.
   */
  private async issuerLive(issuerTag: string, orgId: string, isLive: () => Promise<boolean>): Promise<boolean> {
    const key = `${issuerTag}:${orgId}`;
    const now = this.options.clock.now();
    if (this.liveIssuers.get(key, now) === true) return true;
    const startedAt = this.liveIssuers.begin();
    const live = await isLive();
    if (live) this.liveIssuers.set(key, true, now + this.memoTtlMs, [issuerTag, tags.org(orgId)], startedAt);
    return live;
  }

  private async fromJwt(token: string): Promise<Resolved> {
    const verified = this.verified(token, ['user', 'runtime', 'machine'] as const);
    switch (verified.typ) {
      case 'user':
        return this.userPrincipal(token, verified as VerifiedToken<'user'>, 'token');
      case 'runtime': {
        const c = verified.claims as { wid: string; org: string; prj: readonly string[]; reg: string; scope: readonly string[] };
        // A revoked registration cuts off every worker registered with it, also after a restart or a memo expiry
        // (the `registration:` tag only clears memo entries that exist): checked on every memo miss.
        if (!uuidPattern.test(c.reg) || !(await this.issuerLive(tags.registration(c.reg), c.org, () => registrationIsLive(this.options.db, c.org, c.reg)))) {
          throw new TroupeError('AUTH_INVALID', 'the registration of this worker is revoked');
        }
        // The token names the projects it was issued for; the worker's current ones are read, so a project taken away
        // is out of reach at once rather than when the token expires (issue 30). Memoised under the worker's tag,
        // which its actor revokes when its projects shrink.
        const current = uuidPattern.test(c.wid) ? await workerProjects(this.options.db, c.org, c.wid) : undefined;
        const projectIds = current === undefined ? c.prj : c.prj.filter((p) => current.includes(p));
        return {
          principal: { kind: 'runtime', workerId: c.wid, orgId: c.org, projectIds, registrationId: c.reg, scopes: c.scope },
          expiresAt: verified.expiresAt,
        };
      }
      case 'machine': {
        const c = verified.claims as { cid: string; org: string; scope: readonly string[]; rqid?: string };
        // A revoked client's tokens are refused for the rest of their hour, also where no memo entry was cleared.
        if (!(await this.issuerLive(tags.machineClient(c.cid), c.org, () => machineClientIsLive(this.options.db, c.org, c.cid)))) {
          throw new TroupeError('AUTH_INVALID', 'this machine client is revoked');
        }
        const principal: Principal = c.rqid === undefined
          ? { kind: 'machine', clientId: c.cid, orgId: c.org, scopes: c.scope }
          : { kind: 'machine', clientId: c.cid, orgId: c.org, scopes: c.scope, requesterId: c.rqid };
        return { principal, expiresAt: verified.expiresAt };
      }
    }
  }

  private async fromUserJwt(token: string, via: 'cookie'): Promise<Resolved> {
    return this.userPrincipal(token, this.verified(token, ['user'] as const), via);
  }

  /**
   * The role is read at resolve time, never trusted from the token: a demotion or removal applies at once. A token
   * ended by logout is refused from storage here (so on every node, also after a restart) and, once memoised,
   * through its `userToken:` tag.
   */
  private async userPrincipal(token: string, verified: VerifiedToken<'user'>, via: 'token' | 'cookie'): Promise<Resolved> {
    const { sub, org } = verified.claims;
    const tokenId = userTokenId(token, verified);
    const [role, revoked] = await Promise.all([orgRoleOf(this.options.db, org, sub), userTokenRevoked(this.options.db, tokenId)]);
    if (role === undefined) throw new TroupeError('AUTH_INVALID');
    if (revoked) throw new TroupeError('AUTH_INVALID', 'this session has ended (logged out)');
    return {
      principal: { kind: 'user', userId: sub, orgId: org, orgRole: role, via },
      expiresAt: verified.expiresAt,
      sessionTag: tags.userToken(tokenId),
    };
  }

  private onRevocation(event: unknown): void {
    const tags = parseRevocation(event);
    if (tags === undefined) {
      this.log.warn({ event }, 'ignored malformed identity.revoked event');
      return;
    }
    this.invalidate(tags);
  }
}

interface Resolved {
  readonly principal: Principal;
  readonly expiresAt: number;
  /** The revocation tag of this one credential, for those the principal does not name (a user's login session). */
  readonly sessionTag?: string;
}

/** The value of one cookie; undefined when absent. Later duplicates are ignored, as browsers send the most specific first. */
export function readCookie(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
  }
  return undefined;
}

function principalKey(p: Principal): string {
  switch (p.kind) {
    case 'user': return `user:${p.orgId}:${p.userId}`;
    case 'apiKey': return `apiKey:${p.keyId}`;
    case 'runtime': return `runtime:${p.workerId}`;
    case 'machine': return `machine:${p.clientId}`;
    case 'admin': return 'admin';
  }
}
