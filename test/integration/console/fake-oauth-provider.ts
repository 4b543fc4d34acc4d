import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An OAuth provider on loopback for the console's integration tests, strict the way real ones are (as the one in
 * test/integration/integrations/oauth.connect.test.ts): the authorize endpoint checks the client and the PKCE
 * challenge and redirects the browser back with a code at once (the person "consents"); the token endpoint checks
 * the client secret, the code, its redirect URI and the verifier. It answers Linear's paths and GitHub's.
 */
export const CLIENT_ID = 'troupe-console-client';
export const CLIENT_SECRET = 'troupe-console-secret';

export class FakeOAuthProvider {
  readonly consents: string[] = [];
  private constructor(private readonly server: http.Server, readonly url: string) {}

  static async start(): Promise<FakeOAuthProvider> {
    const codes = new Map<string, { challenge: string; redirectUri: string; used: boolean }>();
    let n = 0;
    let provider: FakeOAuthProvider | undefined;
    const server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://provider');
      if (req.method === 'GET' && (url.pathname === '/oauth/authorize' || url.pathname === '/login/oauth/authorize')) {
        const q = url.searchParams;
        if (q.get('client_id') !== CLIENT_ID || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge') || !q.get('state')) {
          res.writeHead(400).end('bad authorize request');
          return;
        }
        const code = `code-${++n}`;
        codes.set(code, { challenge: q.get('code_challenge')!, redirectUri: q.get('redirect_uri')!, used: false });
        provider?.consents.push(url.pathname);
        const back = new URL(q.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', q.get('state')!);
        res.writeHead(302, { location: back.toString() }).end();
        return;
      }
      if (req.method === 'POST' && (url.pathname === '/oauth/token' || url.pathname === '/login/oauth/access_token')) {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
          const reply = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
          if (form.get('client_id') !== CLIENT_ID || form.get('client_secret') !== CLIENT_SECRET) return reply(401, { error: 'invalid_client' });
          const issued = codes.get(form.get('code') ?? '');
          const verifier = form.get('code_verifier') ?? '';
          if (form.get('grant_type') !== 'authorization_code' || !issued || issued.used || issued.redirectUri !== form.get('redirect_uri')
            || createHash('sha256').update(verifier).digest('base64url') !== issued.challenge) {
            return reply(400, { error: 'invalid_grant', error_description: 'code, verifier or redirect_uri mismatch' });
          }
          issued.used = true;
          reply(200, { access_token: `oauth_${form.get('code')}`, token_type: 'Bearer', expires_in: 3600, scope: 'read', refresh_token: 'refresh-1' });
        });
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    provider = new FakeOAuthProvider(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return provider;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
