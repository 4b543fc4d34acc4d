// Invariant: over a real socket, the auth step runs before the handler for every mode — refusals are 401/403
// {error, code} and the handler never runs — and the handler sees the resolved principal.
import { expect } from 'chai';
import type { AuthMode, Route } from '../../../http/types.js';
import { startTestServer, testTokens, type TestDeps, type TestServer } from '../../support/http.js';

const modes: AuthMode[] = ['none', 'admin', 'org', 'human', 'runtime', 'any'];
let handled = 0;
const routes: Route<TestDeps>[] = modes.map((mode) => ({
  method: 'post',
  path: `/api/auth/${mode}`,
  auth: mode,
  summary: mode,
  bodySchema: { type: 'object', required: ['x'] },
  handler: async (req) => {
    handled++;
    return { body: { principal: req.principal ?? null } };
  },
}));

describe('http server: auth step', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer(routes);
  });
  after(async () => {
    await t.close();
  });

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  it('passes the resolved principal to the handler', async () => {
    const r = await t.call('POST', '/api/auth/human', { body: { x: 1 }, headers: { cookie: `troupe_session=${testTokens.session}`, 'sec-fetch-site': 'same-origin' } });
    expect(r.status).to.equal(200);
    expect(r.json.principal).to.include({ kind: 'user', via: 'cookie' });
    const admin = await t.call('POST', '/api/auth/admin', { body: { x: 1 }, headers: bearer(testTokens.admin) });
    expect(admin.json.principal).to.deep.equal({ kind: 'admin' });
    const none = await t.call('POST', '/api/auth/none', { body: { x: 1 }, headers: bearer('whatever') });
    expect(none.json.principal).to.equal(null);
  });

  const refusals: Array<[AuthMode, Record<string, string>, number, string]> = [
    ['admin', {}, 401, 'AUTH_MISSING'],
    ['admin', bearer(testTokens.user), 403, 'AUTH_ADMIN_ONLY'],
    ['admin', bearer('not-the-admin-token'), 401, 'AUTH_INVALID'],
    ['org', bearer(testTokens.admin), 403, 'AUTH_FORBIDDEN'],
    ['org', bearer(testTokens.runtime), 403, 'AUTH_FORBIDDEN'],
    ['org', {}, 401, 'AUTH_MISSING'],
    ['human', bearer(testTokens.apiKey), 403, 'AUTH_HUMAN_ONLY'],
    ['human', bearer(testTokens.machine), 403, 'AUTH_HUMAN_ONLY'],
    ['runtime', bearer(testTokens.user), 403, 'AUTH_FORBIDDEN'],
    ['any', bearer('garbage'), 401, 'AUTH_INVALID'],
    ['any', bearer(testTokens.admin), 403, 'AUTH_FORBIDDEN'],
  ];
  for (const [mode, headers, status, code] of refusals) {
    it(`${mode} route refuses ${JSON.stringify(headers)} with ${status} ${code}, before the handler`, async () => {
      const before = handled;
      const r = await t.call('POST', `/api/auth/${mode}`, { body: { x: 1 }, headers });
      expect(r.status).to.equal(status);
      expect(r.json.code).to.equal(code);
      expect(r.json.error).to.be.a('string');
      expect(handled).to.equal(before);
    });
  }

  it('authenticates before validating, so an anonymous caller learns nothing about the schema', async () => {
    const r = await t.call('POST', '/api/auth/org', { body: {} });
    expect(r.status).to.equal(401);
  });
});
