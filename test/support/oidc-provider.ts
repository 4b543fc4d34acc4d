import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/**
 * A real OpenID provider (oidc-provider, the reference implementation) on loopback in the test process, for the
 * single sign-on tests (issue 37 §1). People sign in at its own HTML form (an email field and a button), which a
 * browser test fills like a person would and `authorize` fills over HTTP with a cookie jar. Accounts and their
 * groups are the test's to change between sign-ins; `replaceNextIdToken` makes the token endpoint answer one
 * exchange with another ID token (one this or another provider issued to someone else), to test that the relying
 * party refuses it.
 */
export interface OidcAccount {
  readonly email: string;
  readonly givenName?: string;
  readonly familyName?: string;
  readonly picture?: string;
  readonly groups?: readonly string[];
  /** Leaves the groups claim out of the tokens altogether. */
  readonly omitGroups?: boolean;
  /** The provider says nothing of whether the email is verified (no `email_verified` claim). */
  readonly omitEmailVerified?: boolean;
}

export interface OidcClient {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly redirectUris: readonly string[];
}

export class TestOidcProvider {
  private readonly accounts = new Map<string, OidcAccount>();
  private nextIdToken: string | undefined;

  private constructor(readonly issuer: string, private readonly server: Server, private readonly provider: Provider) {}

  static async start(clients: readonly OidcClient[]): Promise<TestOidcProvider> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const key = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' };
    let self: TestOidcProvider | undefined;
    const provider = new Provider(issuer, {
      clients: clients.map((c) => ({
        client_id: c.clientId, client_secret: c.clientSecret, redirect_uris: [...c.redirectUris],
        grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post',
      })),
      jwks: { keys: [key] },
      adapter: MemoryAdapter,
      ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
      cookies: { keys: [randomBytes(32).toString('hex')] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['given_name', 'family_name', 'name', 'picture', 'groups'] },
      // Scope claims in the ID token itself (not only at userinfo), as the relying party reads them there.
      conformIdTokenClaims: false,
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      findAccount: (_ctx: unknown, sub: string) => {
        const account = self!.accounts.get(sub);
        return account && { accountId: sub, claims: () => claimsOf(sub, account) };
      },
      // Consent is taken as given (a first-party sign-in): a grant for what was asked is made on first use.
      async loadExistingGrant(ctx: { oidc: { client: { clientId: string }; session: { accountId: string; grantIdFor(id: string): string | undefined }; result?: { consent?: { grantId?: string } } } }) {
        const grantId = ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
        if (grantId) return provider.Grant.find(grantId);
        const grant = new provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
        grant.addOIDCScope('openid email profile');
        await grant.save();
        return grant;
      },
    });
    self = new TestOidcProvider(issuer, server, provider);
    provider.use(async (ctx, next) => {
      await next();
      const body = ctx.body as { id_token?: string } | undefined;
      if (ctx.path === '/token' && self!.nextIdToken !== undefined && body?.id_token !== undefined) {
        ctx.body = { ...body, id_token: self!.nextIdToken };
        self!.nextIdToken = undefined;
      }
    });
    const oidc = provider.callback();
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const interaction = /^\/interaction\/([\w-]+)$/.exec(req.url ?? '');
      // The icon a browser asks every page's host for: none, without a 404 in the page's console.
      if (req.url === '/favicon.ico') res.writeHead(204).end();
      else if (interaction) void self!.interact(req, res, interaction[1]!).catch((err: unknown) => { res.statusCode = 500; res.end(String(err)); });
      else oidc(req, res);
    });
    return self;
  }

  setAccount(account: OidcAccount): void {
    this.accounts.set(account.email, account);
  }

  /** The token endpoint's next answer carries this ID token instead of the one it issued. */
  replaceNextIdToken(idToken: string): void {
    this.nextIdToken = idToken;
  }

  /**
   * Signs `email` in at this provider over HTTP, starting from an authorization URL, and returns the URL the
   * provider sends the browser back to (the redirect URI with `code`, `state`, `iss`), without following it.
   */
  async authorize(authorizationUrl: string, email: string): Promise<URL> {
    const jar = new Map<string, string>();
    const redirectUri = new URL(authorizationUrl).searchParams.get('redirect_uri')!;
    let next: { url: string; init: RequestInit } = { url: authorizationUrl, init: {} };
    for (let hop = 0; hop < 10; hop++) {
      const response = await fetch(next.url, { ...next.init, redirect: 'manual', headers: { ...(next.init.headers as Record<string, string> | undefined), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair!.indexOf('=');
        jar.set(pair!.slice(0, at), pair!.slice(at + 1));
      }
      const location = response.headers.get('location');
      await response.arrayBuffer();
      if (location === null) {
        // The provider's sign-in form: post the email to it.
        if (!/\/interaction\//.test(next.url) || next.init.method === 'POST') throw new Error(`the provider answered ${response.status} at ${next.url}`);
        next = { url: next.url, init: { method: 'POST', body: new URLSearchParams({ email }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } } };
        continue;
      }
      const target = new URL(location, next.url);
      if (target.href.startsWith(redirectUri)) return target;
      next = { url: target.href, init: {} };
    }
    throw new Error('the provider never sent the browser back');
  }

  /** An ID token this provider issues to `client` for `email` with `nonce` (a full code exchange of its own). */
  async idTokenFor(client: OidcClient, email: string, nonce: string): Promise<string> {
    const verifier = randomBytes(32).toString('base64url');
    const url = new URL(`${this.issuer}/auth`);
    url.search = new URLSearchParams({
      client_id: client.clientId, redirect_uri: client.redirectUris[0]!, response_type: 'code', scope: 'openid email profile', state: 's', nonce,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    }).toString();
    const back = await this.authorize(url.href, email);
    const code = back.searchParams.get('code');
    if (!code) throw new Error(`no code: ${back.href}`);
    const token = await fetch(`${this.issuer}/token`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUris[0]!, code_verifier: verifier, client_id: client.clientId, client_secret: client.clientSecret }),
    });
    const body = await token.json() as { id_token?: string };
    if (!body.id_token) throw new Error(`no ID token: ${JSON.stringify(body)}`);
    return body.id_token;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The provider's sign-in form: GET shows it, POST signs the named account in (or shows it again, saying why). */
  private async interact(req: IncomingMessage, res: ServerResponse, uid: string): Promise<void> {
    await this.provider.interactionDetails(req, res);
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const email = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('email') ?? '';
      if (this.accounts.has(email)) {
        await this.provider.interactionFinished(req, res, { login: { accountId: email } }, { mergeWithLastSubmission: false });
        return;
      }
      return this.form(res, uid, `No account ${email} here.`);
    }
    return this.form(res, uid, undefined);
  }

  private form(res: ServerResponse, uid: string, problem: string | undefined): void {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><head><title>Test provider</title></head><body><main>
<h1>Test identity provider</h1>${problem === undefined ? '' : `<p role="alert">${problem.replace(/[<>&]/g, '')}</p>`}
<form method="post" action="/interaction/${uid}"><label for="email">Provider email</label><input id="email" name="email" type="email">
<button type="submit">Sign in at the provider</button></form></main></body></html>`);
  }
}

/** oidc-provider's storage, per provider instance and model, in memory: codes are consumed here, so a replay is refused. */
const stores = new Map<string, Map<string, { payload: Record<string, unknown>; until: number }>>();
class MemoryAdapter {
  private readonly store: Map<string, { payload: Record<string, unknown>; until: number }>;
  constructor(name: string) {
    this.store = stores.get(name) ?? new Map();
    stores.set(name, this.store);
  }
  async upsert(id: string, payload: Record<string, unknown>, expiresIn: number) { this.store.set(id, { payload, until: Date.now() + expiresIn * 1000 }); }
  async find(id: string) {
    const hit = this.store.get(id);
    return hit && hit.until > Date.now() ? hit.payload : undefined;
  }
  async findByUid(uid: string) { return [...this.store.values()].find((e) => e.payload.uid === uid && e.until > Date.now())?.payload; }
  async findByUserCode(code: string) { return [...this.store.values()].find((e) => e.payload.userCode === code)?.payload; }
  async consume(id: string) {
    const hit = this.store.get(id);
    if (hit) hit.payload = { ...hit.payload, consumed: Math.floor(Date.now() / 1000) };
  }
  async destroy(id: string) { this.store.delete(id); }
  async revokeByGrantId(grantId: string) { for (const [id, e] of this.store) if (e.payload.grantId === grantId) this.store.delete(id); }
}

function claimsOf(sub: string, account: OidcAccount): Record<string, unknown> {
  return {
    sub, email: account.email, ...(account.omitEmailVerified ? {} : { email_verified: true }),
    ...(account.givenName === undefined ? {} : { given_name: account.givenName }),
    ...(account.familyName === undefined ? {} : { family_name: account.familyName }),
    ...(account.picture === undefined ? {} : { picture: account.picture }),
    ...(account.omitGroups ? {} : { groups: [...(account.groups ?? [])] }),
  };
}
