import type { FunctionComponent } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../api.js';
import { asApiError } from '../data.js';
import { ErrorNote, Loading, PageHeader } from '../ui/bits.js';

/**
 * A page whose script is fetched when the page is first opened (esbuild splits each `import()` into chunks of its
 * own), so the console's first load carries only the pages it starts on. Once loaded it stays: a later visit draws
 * at once. `what` names it while it loads; a chunk that cannot be fetched is said so, under the page's title.
 */
export function lazyPage<P extends object>(title: string, what: string, load: () => Promise<FunctionComponent<P>>): FunctionComponent<P> {
  let loaded: FunctionComponent<P> | undefined;
  return function LazyPage(props: P) {
    const [Page, setPage] = useState<FunctionComponent<P> | undefined>(() => loaded);
    const [error, setError] = useState<ApiError | undefined>(undefined);
    useEffect(() => {
      if (Page) return;
      load().then((component) => { loaded = component; setPage(() => component); }, (err: unknown) => setError(asApiError(err)));
    }, []);
    if (error) return <><PageHeader title={title} /><ErrorNote error={error} title="This page could not be loaded (reload to try again)" /></>;
    if (!Page) return <Loading what={what} />;
    return <Page {...props} />;
  };
}
