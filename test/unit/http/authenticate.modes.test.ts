// Invariant: each AuthMode admits exactly the principals it names — the platform admin token only on admin routes,
// org credentials never on admin routes, only users on human routes, only runtime tokens on runtime routes — with
// 401 for a missing or invalid credential and 403 for a valid one of the wrong kind.
import { expect } from 'chai';
import { authenticate, bearerMatches } from '../../../http/authenticate.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import type { AuthMode } from '../../../http/types.js';
import { testDeps, testTokens } from '../../support/http.js';

const deps = testDeps();
type Caller = 'nothing' | 'admin' | 'wrongAdmin' | 'garbage' | 'user' | 'session' | 'apiKey' | 'machine' | 'runtime';
const credentials: Record<Caller, { authorization?: string; cookie?: string }> = {
  nothing: {},
  admin: { authorization: `Bearer ${testTokens.admin}` },
  wrongAdmin: { authorization: `Bearer ${testTokens.admin}x` },
  garbage: { authorization: 'Bearer nope' },
  user: { authorization: `Bearer ${testTokens.user}` },
  session: { cookie: `other=1; troupe_session=${testTokens.session}` },
  apiKey: { authorization: `Bearer ${testTokens.apiKey}` },
  machine: { authorization: `Bearer ${testTokens.machine}` },
  runtime: { authorization: `Bearer ${testTokens.runtime}` },
};

/** The expected outcome per mode and caller: a principal kind, or the error code. */
const expected: Record<Exclude<AuthMode, 'none'>, Record<Caller, string>> = {
  admin: { nothing: 'AUTH_MISSING', admin: 'admin', wrongAdmin: 'AUTH_INVALID', garbage: 'AUTH_INVALID', user: 'AUTH_ADMIN_ONLY', session: 'AUTH_ADMIN_ONLY', apiKey: 'AUTH_ADMIN_ONLY', machine: 'AUTH_ADMIN_ONLY', runtime: 'AUTH_ADMIN_ONLY' },
  org: { nothing: 'AUTH_MISSING', admin: 'AUTH_FORBIDDEN', wrongAdmin: 'AUTH_INVALID', garbage: 'AUTH_INVALID', user: 'user', session: 'user', apiKey: 'apiKey', machine: 'machine', runtime: 'AUTH_FORBIDDEN' },
  human: { nothing: 'AUTH_MISSING', admin: 'AUTH_FORBIDDEN', wrongAdmin: 'AUTH_INVALID', garbage: 'AUTH_INVALID', user: 'user', session: 'user', apiKey: 'AUTH_HUMAN_ONLY', machine: 'AUTH_HUMAN_ONLY', runtime: 'AUTH_HUMAN_ONLY' },
  runtime: { nothing: 'AUTH_MISSING', admin: 'AUTH_FORBIDDEN', wrongAdmin: 'AUTH_INVALID', garbage: 'AUTH_INVALID', user: 'AUTH_FORBIDDEN', session: 'AUTH_FORBIDDEN', apiKey: 'AUTH_FORBIDDEN', machine: 'AUTH_FORBIDDEN', runtime: 'runtime' },
  any: { nothing: 'AUTH_MISSING', admin: 'AUTH_FORBIDDEN', wrongAdmin: 'AUTH_INVALID', garbage: 'AUTH_INVALID', user: 'user', session: 'user', apiKey: 'apiKey', machine: 'machine', runtime: 'runtime' },
};

async function outcome(mode: AuthMode, caller: Caller): Promise<string> {
  try {
    const principal = await authenticate(mode, { authorization: credentials[caller].authorization, cookie: credentials[caller].cookie }, deps);
    return principal?.kind ?? 'anonymous';
  } catch (err) {
    return err instanceof TroupeError ? err.code : `non-troupe: ${String(err)}`;
  }
}

describe('http authenticate', () => {
  for (const [mode, row] of Object.entries(expected) as Array<[Exclude<AuthMode, 'none'>, Record<Caller, string>]>) {
    for (const [caller, want] of Object.entries(row) as Array<[Caller, string]>) {
      it(`${mode} route, ${caller} → ${want}`, async () => {
        expect(await outcome(mode, caller)).to.equal(want);
      });
    }
  }

  it("'none' routes do not look at credentials at all", async () => {
    for (const caller of Object.keys(credentials) as Caller[]) expect(await outcome('none', caller)).to.equal('anonymous');
  });

  it('refuses to run an auth step without an admin token configured', async () => {
    const unset = { ...deps, config: { adminToken: undefined } };
    const err = await authenticate('org', { authorization: undefined, cookie: undefined }, unset).catch((e: Error) => e);
    expect(err).to.be.instanceOf(Error).and.not.instanceOf(TroupeError);
  });

  it('matches the bearer scheme case-insensitively and nothing looser', () => {
    expect(bearerMatches(`bearer ${testTokens.admin}`, testTokens.admin)).to.equal(true);
    expect(bearerMatches(`Bearer ${testTokens.admin} extra`, testTokens.admin)).to.equal(false);
    expect(bearerMatches(`Basic ${testTokens.admin}`, testTokens.admin)).to.equal(false);
    expect(bearerMatches(testTokens.admin, testTokens.admin)).to.equal(false);
    expect(bearerMatches(undefined, testTokens.admin)).to.equal(false);
  });
});
