import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { onSessionEnded, post } from './api.js';
import { boot, signedIn } from './boot.js';
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
/** Started before the first render: the reads the first screen needs are on their way while the scripts run. */
const booting = boot();
/**
 * How long the first render waits for the boot. Its reads were started with the page and are usually here by the
 * time the scripts have run, so the console draws its page once, with the content, instead of "Loading" and then
 * the content frames later (a busy machine pays most for the pass in between); a slower answer gets "Loading".
 */
const BOOT_WAIT_MS = 200;

/** `booted`: who the boot found, when it answered before the first render. */
function App({ booted }: { booted: Me | null | undefined }) {
  const { path } = useLocation();
  const [me, setMe] = useState<Me | null | undefined>(booted);
  const [problem, setProblem] = useState<ReturnType<typeof asApiError> | undefined>(undefined);
  const [ended, setEnded] = useState(false);

  const refreshMe = (loading = signedIn().then((yes) => (yes ? loadMe() : null))) => loading.then(
    (loaded) => { setMe(loaded); setProblem(undefined); },
    (error: unknown) => {
      const apiError = asApiError(error);
      if (apiError.status === 401) setMe(null);
      else setProblem(apiError);
    },
  );
  useEffect(() => { if (booted === undefined) void refreshMe(booting); }, []);
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
interceptLinks(document.body);
let drawn = false;
const draw = (booted?: Me | null) => {
  if (drawn) return;
  drawn = true;
  root.textContent = '';
  render(<App booted={booted} />, root);
};
// A refused boot is drawn as not booted: the app then takes the refusal from `booting` and shows it.
booting.then(draw, () => draw());
setTimeout(draw, BOOT_WAIT_MS);
