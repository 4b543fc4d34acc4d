// Invariant: a write made with the browser session cookie goes through only when the browser says it came from this
// origin; reads, and credentials a browser never attaches by itself (bearer tokens), are not checked.
import { expect } from 'chai';
import { assertSameOriginWrite } from '../../../http/csrf.js';
import type { Principal } from '../../../actors/services/identity/principal.js';

const cookieUser: Principal = { kind: 'user', userId: 'u', orgId: 'o', orgRole: 'member', via: 'cookie' };
const bearerUser: Principal = { ...cookieUser, via: 'token' };
const host = { host: 'troupe.test:8080' };

const refuses = (method: string, headers: Record<string, string>, p: Principal = cookieUser) =>
  expect(() => assertSameOriginWrite(method, headers, p)).to.throw(/session cookie/);
const allows = (method: string, headers: Record<string, string>, p: Principal | undefined = cookieUser) =>
  expect(() => assertSameOriginWrite(method, headers, p)).not.to.throw();

describe('session-cookie writes must come from this origin', () => {
  it('lets a same-origin browser write (Sec-Fetch-Site, or Origin naming this host)', () => {
    allows('POST', { ...host, 'sec-fetch-site': 'same-origin' });
    allows('DELETE', { ...host, origin: 'http://troupe.test:8080' });
    allows('PATCH', { host: 'Troupe.Test:8080', origin: 'http://troupe.test:8080' });
  });

  it('refuses cross-site and same-site-but-other-origin writes, and writes that say nothing', () => {
    refuses('POST', { ...host, 'sec-fetch-site': 'cross-site', origin: 'http://troupe.test:8080' });
    refuses('POST', { ...host, 'sec-fetch-site': 'same-site' });
    refuses('POST', { ...host, 'sec-fetch-site': 'none' });
    refuses('POST', { ...host, origin: 'http://evil.test' });
    refuses('POST', { ...host, origin: 'http://troupe.test:9090' });
    refuses('POST', { ...host, origin: 'null' });
    refuses('POST', { ...host, origin: 'not a url' });
    refuses('PUT', host);
    refuses('POST', { origin: 'http://troupe.test:8080' });
  });

  it('does not check reads, bearer credentials or anonymous calls', () => {
    allows('GET', { ...host, 'sec-fetch-site': 'cross-site' });
    allows('HEAD', host);
    allows('POST', host, bearerUser);
    expect(() => assertSameOriginWrite('POST', host, undefined)).not.to.throw();
    allows('POST', host, { kind: 'apiKey', keyId: 'k', orgId: 'o', scopes: ['write'] });
  });
});
