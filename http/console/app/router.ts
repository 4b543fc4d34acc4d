import { useEffect, useState } from 'preact/hooks';

/**
 * Client-side navigation over the History API: the node answers every page path with the same shell, and this
 * module decides what it shows. Links are real anchors (keyboard, middle-click and copy work); a plain click is
 * intercepted and becomes a history push.
 */
const listeners = new Set<() => void>();

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (to === location.pathname + location.search) return;
  if (options.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const listener of listeners) listener();
}

export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const changed = () => setTick((n) => n + 1);
    listeners.add(changed);
    addEventListener('popstate', changed);
    return () => {
      listeners.delete(changed);
      removeEventListener('popstate', changed);
    };
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/** Matches `/sessions/:id` style patterns; returns the named segments, or undefined. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const got = path.replace(/\/+$/, '').split('/');
  if (path === '/' && pattern === '/') return {};
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(':')) params[w.slice(1)] = decodeURIComponent(g);
    else if (w !== g) return undefined;
  }
  return params;
}

/** Anchor clicks inside the page go through `navigate`, unless the person asked for a new tab or window. */
export function interceptLinks(root: HTMLElement): void {
  root.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const anchor = (event.target as Element).closest('a');
    if (!anchor || anchor.target !== '' || anchor.origin !== location.origin || anchor.hasAttribute('download')) return;
    event.preventDefault();
    navigate(anchor.pathname + anchor.search);
  });
}
