import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get, onSessionEnded, post } from './api.js';
import type { AuthSession } from './api-types.js';
import { loadMe, MeContext, type Me } from './me.js';
import { interceptLinks, match, navigate, useLocation } from './router.js';
import { SignIn } from './pages/sign-in.js';
import { Shell } from './ui/shell.js';
import { pages } from './pages/index.js';
import { asApiError } from './data.js';
import { ErrorNote, Loading } from './ui/bits.js';
import './styles.css';

/**
 * The console: signs the person in with the existing login (the node sets the HttpOnly session cookie), then
 * routes among the pages. When any call answers 401 the session has ended: back to sign-in, remembering where
 * the person was.
 */
/** Asked first, so a page opened while signed out shows the form without being refused. */
const signedIn = () => get<AuthSession>('/api/auth/session').then((r) => r.signedIn);

function App() {
  const { path } = useLocation();
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [problem, setProblem] = useState<ReturnType<typeof asApiError> | undefined>(undefined);
  const [ended, setEnded] = useState(false);

  const refreshMe = () => signedIn().then((yes) => (yes ? loadMe() : null)).then(
    (loaded) => { setMe(loaded); setProblem(undefined); },
    (error: unknown) => {
      const apiError = asApiError(error);
      if (apiError.status === 401) setMe(null);
      else setProblem(apiError);
    },
  );
  useEffect(() => { void refreshMe(); }, []);
  useEffect(() => onSessionEnded(() => { setEnded(true); setMe(null); }), []);

  useEffect(() => {
    if (me === null && path !== '/sign-in') navigate(`/sign-in?next=${encodeURIComponent(path + location.search)}`, { replace: true });
    if (me && path === '/sign-in') navigate(new URLSearchParams(location.search).get('next') ?? '/', { replace: true });
  }, [me, path]);

  if (problem) return <main class="center"><ErrorNote error={problem} title="The console could not start" /></main>;
  if (me === undefined) return <main class="center"><Loading what="the console" /></main>;
  if (me === null || path === '/sign-in') {
    return <SignIn ended={ended} onSignedIn={() => { setEnded(false); void refreshMe(); }} />;
  }
  const signOut = async () => {
    await post('/api/auth/logout').catch(() => undefined);
    setEnded(false);
    setMe(null);
  };
  for (const page of pages) {
    const params = match(page.path, path);
    if (params) {
      const Page = page.component;
      return (
        <MeContext.Provider value={me}>
          <Shell current={page.section} onSignOut={signOut}><Page {...params} /></Shell>
        </MeContext.Provider>
      );
    }
  }
  return (
    <MeContext.Provider value={me}>
      <Shell current="" onSignOut={signOut}><p>There is no such page. <a href="/">Go to sessions</a>.</p></Shell>
    </MeContext.Provider>
  );
}

const root = document.getElementById('app')!;
root.textContent = '';
interceptLinks(document.body);
render(<App />, root);
