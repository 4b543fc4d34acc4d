import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { TestNode } from '../../support/node.js';
import { TestOidcProvider, type OidcClient } from '../../support/oidc-provider.js';
import type { TestDnsServer } from '../../support/dns-server.js';
import { auditOutboxDepth } from '../../../storage/audit-outbox.js';

/**
 * What the single sign-on suites share: an org whose people sign in at a real OpenID provider on loopback, a second
 * provider (another issuer), a second client at the first, and the relying party's steps over HTTP.
 */
export const PASSWORD = 'correct horse battery staple';

export interface SsoOrg {
  readonly orgId: string;
  readonly domain: string;
  readonly ownerEmail: string;
  readonly ownerToken: string;
  readonly apiKey: string;
}

export async function provisionSsoOrg(t: TestNode, name: string): Promise<SsoOrg> {
  const domain = `${name.toLowerCase()}-${randomBytes(3).toString('hex')}.test`;
  const ownerEmail = `owner@${domain}`;
  const r = await t.call('POST', '/api/admin/orgs', { token: t.adminToken, body: { name, owner: { email: ownerEmail, password: PASSWORD } } });
  expect(r.status, r.text).to.equal(201);
  return { orgId: r.json.org.id, domain, ownerEmail, ownerToken: r.json.userToken, apiKey: r.json.apiKey.fullKey };
}

export async function addMember(t: TestNode, org: SsoOrg, local: string, role: string): Promise<{ id: string; email: string; token: string }> {
  const email = `${local}@${org.domain}`;
  const r = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email, role, password: PASSWORD } });
  expect(r.status, r.text).to.equal(201);
  return { id: r.json.user.id, email, token: r.json.userToken };
}

export function nodeClient(t: TestNode, clientId = `troupe-${randomBytes(4).toString('hex')}`): OidcClient {
  return { clientId, clientSecret: randomBytes(24).toString('base64url'), redirectUris: [`${t.url}/auth/oidc/callback`] };
}

export interface ClaimedDomain { domain: string; status: string; txtName: string; txtValue: string; verifiedAt: string | null }

/** The org's claim of `domain` as its single sign-on settings answer it to the owner. */
export async function claimOf(t: TestNode, org: SsoOrg, domain = org.domain): Promise<ClaimedDomain> {
  const r = await t.call('GET', `/api/org/${org.orgId}/sso`, { token: org.ownerToken });
  expect(r.status, r.text).to.equal(200);
  const claim = (r.json.domains as ClaimedDomain[]).find((d) => d.domain === domain);
  expect(claim, `${domain} claimed`).to.not.equal(undefined);
  return claim!;
}

/** `POST /api/org/{orgId}/sso/domains/{domain}/verify` as `token` (the org's owner unless said). */
export const verifyCall = (t: TestNode, org: SsoOrg, domain = org.domain, token = org.ownerToken) =>
  t.call('POST', `/api/org/${org.orgId}/sso/domains/${encodeURIComponent(domain)}/verify`, { token });

/** What an owner does to prove a claimed domain: publish the TXT record the settings name, then verify it. */
export async function verifyDomain(t: TestNode, dns: TestDnsServer, org: SsoOrg, domain = org.domain): Promise<void> {
  const claim = await claimOf(t, org, domain);
  dns.setTxt(claim.txtName, [claim.txtValue]);
  const r = await verifyCall(t, org, domain);
  expect(r.status, r.text).to.equal(200);
  expect(r.json).to.include({ domain, status: 'verified' });
}

export interface Started { readonly authorizationUrl: string; readonly browserCookie: string; readonly nonce: string }

/** `POST /api/auth/oidc/start` for an email whose domain has single sign-on: the provider's URL and this browser's cookie. */
export async function startSignIn(t: TestNode, email: string, next?: string): Promise<Started> {
  const r = await t.call('POST', '/api/auth/oidc/start', { body: { email, ...(next === undefined ? {} : { next }) } });
  expect(r.status, r.text).to.equal(200);
  expect(r.json.sso, r.text).to.equal(true);
  const cookie = r.headers.getSetCookie().find((c) => c.startsWith('troupe_oidc='));
  expect(cookie, 'the browser-binding cookie').to.be.a('string');
  expect(cookie).to.match(/HttpOnly/).and.match(/SameSite=Lax/).and.match(/Path=\/auth\/oidc\/callback/);
  const url = new URL(r.json.authorizationUrl as string);
  return { authorizationUrl: url.href, browserCookie: cookie!.split(';')[0]!, nonce: url.searchParams.get('nonce')! };
}

export interface Finished { readonly status: number; readonly location: string | null; readonly sessionCookie: string | undefined; readonly json: any }

/** The browser's return to the node's callback (not following the node's redirect). */
export async function finishSignIn(t: TestNode, back: URL, browserCookie: string | undefined, accept = 'application/json'): Promise<Finished> {
  const headers: Record<string, string> = { accept };
  if (browserCookie !== undefined) headers.cookie = browserCookie;
  const response = await fetch(`${t.url}${back.pathname}${back.search}`, { headers, redirect: 'manual' });
  const text = await response.text();
  const session = response.headers.getSetCookie().find((c) => c.startsWith('troupe_session='));
  // Signed in, the node answers a page that moves on (`Refresh`); a refusal to a browser is a 303 to the sign-in page.
  const refresh = /^0; url=(.*)$/.exec(response.headers.get('refresh') ?? '')?.[1];
  return { status: response.status, location: response.headers.get('location') ?? refresh ?? null, sessionCookie: session?.split(';')[0], json: text ? safeJson(text) : undefined };
}

const safeJson = (text: string): unknown => { try { return JSON.parse(text); } catch { return undefined; } };

/** Start, sign in at the provider as `email`, and come back: the whole sign-in without a browser. */
export async function signInWithSso(t: TestNode, provider: TestOidcProvider, email: string): Promise<Finished> {
  const started = await startSignIn(t, email);
  return finishSignIn(t, await provider.authorize(started.authorizationUrl, email), started.browserCookie);
}

/** The caller's role in its org, read with the session cookie as the console reads it. */
export async function roleWithCookie(t: TestNode, sessionCookie: string): Promise<{ role: string; email: string; firstName: string | null; lastName: string | null; profilePictureUrl: string | null }> {
  const orgs = await t.call('GET', '/api/org/list', { headers: { cookie: sessionCookie } });
  expect(orgs.status, orgs.text).to.equal(200);
  const me = await t.call('GET', '/api/cli/whoami', { headers: { cookie: sessionCookie } });
  expect(me.status, me.text).to.equal(200);
  const active = (orgs.json.orgs as { id: string; role: string }[]).find((o) => o.id === orgs.json.activeOrgId)!;
  return { role: active.role, ...me.json.user };
}

export interface AuditEntry { type: string; actor: string; subject: string | null; payload: Record<string, unknown> }

/** The org's audit chain, oldest first, once the outbox has drained. */
export async function chainOf(t: TestNode, ownerToken: string): Promise<AuditEntry[]> {
  for (let i = 0; i < 200 && (await auditOutboxDepth(t.node.deps.db)) > 0; i++) await new Promise((r) => setTimeout(r, 50));
  const res = await t.call('GET', '/api/audit?limit=500', { token: ownerToken });
  expect(res.status, res.text).to.equal(200);
  return (res.json.entries as AuditEntry[]).reverse();
}
