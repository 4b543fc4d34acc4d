import { get } from './api.js';
import type { AuthSession } from './api-types.js';
import { readEarly } from './early.js';
import { firstPageRead, SIGNED_IN_META } from './first-screen.js';
import { loadMe, type Me } from './me.js';

/** Asked first by a page served signed out, so that it shows the form without being refused. */
export const signedIn = (): Promise<boolean> => get<AuthSession>('/api/auth/session').then((r) => r.signedIn);

/**
 * Who is signed in, or null. A page the node served to a signed-in browser says so (the node checked the session
 * cookie with the request) and names the first screen's reads, which the browser has been fetching since: the
 * console takes those and starts drawing once they are all here, so its first render has the rows, with no
 * "Loading" drawn in between and no second pass a frame later.
 */
export function boot(): Promise<Me | null> {
  if (document.querySelector(`meta[name="${SIGNED_IN_META}"]`) === null) return signedIn().then((yes) => (yes ? loadMe() : null));
  const page = firstPageRead(location.pathname, new URLSearchParams(location.search));
  const firstPage = page === undefined ? undefined : readEarly(page);
  return Promise.all([loadMe(), firstPage]).then(([me]) => me);
}
