/**
 * Who is calling. Resolved once per request at the HTTP edge from the credential it carries, and passed to
 * authorization (Cedar) and to handlers. `orgId` is always the authenticated org: a body's orgId is checked
 * against it, never trusted.
 */
export const orgRoles = ['owner', 'admin', 'member', 'viewer'] as const;
export type OrgRole = (typeof orgRoles)[number];

export const projectRoles = ['admin', 'editor', 'viewer'] as const;
export type ProjectRole = (typeof projectRoles)[number];

export type Principal =
  | {
      readonly kind: 'user';
      readonly userId: string;
      readonly orgId: string;
      readonly orgRole: OrgRole;
      /** How the user authenticated: bearer user token, or the browser session cookie. */
      readonly via: 'token' | 'cookie';
    }
  | {
      readonly kind: 'apiKey';
      readonly keyId: string;
      readonly orgId: string;
      readonly scopes: readonly string[];
      /** Set when the key is bound to a signed requester registration (agent dispatch). */
      readonly requesterId?: string;
    }
  | {
      readonly kind: 'runtime';
      readonly workerId: string;
      readonly orgId: string;
      readonly projectIds: readonly string[];
      readonly registrationId: string;
      readonly scopes: readonly string[];
    }
  | {
      readonly kind: 'machine';
      readonly clientId: string;
      readonly orgId: string;
      readonly scopes: readonly string[];
      readonly requesterId?: string;
    }
  | { readonly kind: 'admin' };

export type OrgPrincipal = Exclude<Principal, { kind: 'admin' }>;
