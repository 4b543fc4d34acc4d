import { useState } from 'preact/hooks';
import { ApiError, post } from '../api.js';
import type { SignInRequest } from '../api-types.js';
import { asApiError } from '../data.js';
import { ErrorNote } from '../ui/bits.js';

/** Email and password against the existing login; the node answers with the HttpOnly session cookie. */
export function SignIn({ ended, onSignedIn }: { ended: boolean; onSignedIn: () => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
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
        <input id="password" name="password" type="password" autoComplete="current-password" required value={password}
          onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
        <ErrorNote error={error} />
        <button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
        <p class="muted small">No account yet? An operator creates one with <code>npx troupe user create</code>.</p>
      </form>
    </main>
  );
}
