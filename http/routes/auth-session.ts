import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Route } from '../types.js';

/**
 * `GET /api/auth/session`: whether the browser's session cookie is signed in, answered 200 either way, so a page
 * can decide between its sign-in form and its content without provoking a refusal. It says nothing about any
 * other credential, and nothing but yes or no about the cookie (whoami tells who).
 */
const sessionReply = {
  type: 'object', required: ['signedIn'],
  properties: { signedIn: { type: 'boolean', description: 'The troupe_session cookie names a live user session' } },
} as const;

export function authSessionRoute(): Route<Deps> {
  return {
    method: 'get', path: '/api/auth/session', auth: 'none', tags: ['auth'], responseSchema: sessionReply,
    summary: 'Whether the troupe_session cookie is a live user session (always 200; for browser pages deciding whether to show sign-in)',
    async handler(req, deps) {
      const cookie = req.headers.cookie;
      if (cookie === undefined) return { body: { signedIn: false }, headers: { 'cache-control': 'no-store' } };
      try {
        const principal = await deps.auth.resolve({ cookie });
        return { body: { signedIn: principal?.kind === 'user' }, headers: { 'cache-control': 'no-store' } };
      } catch (err) {
        if (err instanceof TroupeError && err.code === 'AUTH_INVALID') return { body: { signedIn: false }, headers: { 'cache-control': 'no-store' } };
        throw err;
      }
    },
  };
}
