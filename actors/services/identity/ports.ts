import type { Principal } from './principal.js';

/** Turns the credential a request carries into a Principal. */
export interface Authenticator {
  /**
   * Undefined when the request carries no credential at all; throws TroupeError('AUTH_INVALID') when it carries
   * one that is malformed, expired, revoked or unknown. Must be cheap on the hot path (verified tokens are memoised
   * until their expiry, and revocation still applies).
   */
  resolve(credentials: { authorization?: string | undefined; cookie?: string | undefined }): Promise<Principal | undefined>;
  /**
   * What `resolve` would answer for this exact Authorization header from its memo, synchronously (same expiry and
   * revocation checks); undefined when it holds none, and `resolve` must be asked. Lets the hot path (a worker's
   * heartbeat, its token seen before) authenticate without a promise.
   */
  resolveMemoised?(authorization: string): Principal | undefined;
  /**
   * Forgets memoised principals carrying any of these revocation tags on this node at once (see
   * actors/services/identity/revocation.ts); other nodes learn through the `identity.revoked` topic.
   */
  invalidate?(tags: readonly string[]): void;
}

/** A resource as Cedar sees it: its type, id, owning org and, where it has one, project. */
export interface ResourceRef {
  readonly type: string;
  readonly id: string;
  readonly orgId: string;
  readonly projectId?: string;
  readonly attrs?: Readonly<Record<string, string | number | boolean>>;
}

export interface AuthorizationResult {
  readonly allowed: boolean;
  /** Ids of the policies that determined the decision (Cedar's "reason"). */
  readonly determiningPolicies: readonly string[];
  /** Evaluation errors; any error denies. */
  readonly errors: readonly string[];
  /**
   * Set when a platform rule allowed what the org's own policies refuse (an owner reading or managing the org's
   * policies after a `forbid` locked owners out); `authorize` audits it before it returns.
   */
  readonly breakGlass?: true;
}

export interface Authorizer {
  /** Evaluates without throwing, for explanations. */
  check(principal: Principal, action: string, resource: ResourceRef): Promise<AuthorizationResult>;
  /** Throws TroupeError('AUTHZ_DENIED') unless allowed; a break-glass allowance is audited before it returns. */
  authorize(principal: Principal, action: string, resource: ResourceRef): Promise<AuthorizationResult>;
  /** Forgets memoised role lookups carrying any of these revocation tags on this node. */
  invalidate?(tags: readonly string[]): void;
}
