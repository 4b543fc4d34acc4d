import { useState } from 'preact/hooks';
import { ApiError, post } from '../api.js';
import type { operations } from '../../../client/api-types.generated.js';
import { asApiError } from '../data.js';
import { ErrorNote } from '../ui/bits.js';

type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;
type SignInRequest = JsonOf<operations['postApiAuthLogin']['requestBody']>;
type SsoStartRequest = JsonOf<operations['postApiAuthOidcStart']['requestBody']>;
type SsoStartReply = JsonOf<operations['postApiAuthOidcStart']['responses'][200]>;


/** What the callback's refusal codes (`/sign-in?ssoError=CODE`) mean to the person who was sent back here. */
const ssoRefusals: Readonly<Record<string, string>> = {
  VALIDATION_FAILED: 'The single sign-on took too long or was started in another window. Sign in again.',
  AUTH_INVALID: 'Your organisation\'s identity provider did not vouch for you. Sign in again, or ask your administrator.',
  AUTH_FORBIDDEN: 'Your organisation does not let this account in. Ask your administrator for access.',
  UPSTREAM_FAILED: 'Your organisation\'s identity provider could not be reached. Try again in a moment.',
};

function ssoErrorFromAddress(): ApiError | undefined {
  const code = new URLSearchParams(location.search).get('ssoError');
  if (code === null) return undefined;
  // The words alone: the code is in the address for whoever supports the person.
  return new ApiError(401, ssoRefusals[code] ?? 'Single sign-on did not complete. Sign in again.', undefined);
}

/**
 * Email first: an email whose domain an org signs in at its own identity provider goes there (the node answers
 * the provider's address, and the provider sends the browser back signed in); any other signs in with its password
 * against the existing login. Either way the node sets the HttpOnly session cookie.
 */
export function SignIn({ ended, onSignedIn }: { ended: boolean; onSignedIn: () => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<ApiError | undefined>(ssoErrorFromAddress);
  const [busy, setBusy] = useState(false);
  const [redirecting, setRedirecting] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const next = new URLSearchParams(location.search).get('next') ?? undefined;
      const sso = await post<SsoStartReply>('/api/auth/oidc/start', { email, ...(next ? { next } : {}) } satisfies SsoStartRequest);
      if (sso.sso && sso.authorizationUrl) {
        setRedirecting(true);
        location.assign(sso.authorizationUrl);
        return;
      }
      if (password === '') {
        setError(new ApiError(400, 'Enter your password.', 'VALIDATION_FAILED'));
        document.getElementById('password')?.focus();
        return;
      }
      await post('/api/auth/login', { email, password } satisfies SignInRequest);
      onSignedIn();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <form class="card" onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title"><img src="/assets/icon.svg" alt="" width="28" height="28" /> Sign in to Troupe</h1>
        {ended ? <p class="note" role="status">Your session has ended. Sign in again to continue.</p> : null}
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autoComplete="username" required value={email}
          onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autoComplete="current-password" value={password}
          aria-describedby="password-hint" onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
        <p id="password-hint" class="muted small">Leave it empty if your organisation signs in with single sign-on.</p>
        <ErrorNote error={error} />
        {redirecting ? <p class="note" role="status">Continuing at your organisation's identity provider…</p> : null}
        <button type="submit" disabled={busy || redirecting}>{busy ? 'Signing in…' : 'Sign in'}</button>
        <p class="muted small">No account yet? An operator creates one with <code>npx troupe user create</code>.</p>
      </form>
    </main>
  );
}
