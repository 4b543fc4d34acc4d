import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get } from './api.js';

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: ApiError | undefined;
  readonly loading: boolean;
  reload(): void;
}

/** Reads `path` (again whenever it changes, or on `reload`); the newest request wins. */
export function useApi<T>(path: string | undefined): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: path !== undefined });
  const [tick, setTick] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    if (path === undefined) return;
    const ticket = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    get<T>(path).then(
      (data) => { if (ticket === latest.current) setState({ data, loading: false }); },
      (error: unknown) => { if (ticket === latest.current) setState({ error: asApiError(error), loading: false }); },
    );
  }, [path, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

export function asApiError(error: unknown): ApiError {
  return error instanceof ApiError ? error : new ApiError(0, error instanceof Error ? error.message : String(error), undefined);
}

export interface StreamHandlers {
  readonly [event: string]: (data: unknown, id: string) => void;
}

/**
 * An event stream from the node. EventSource reconnects by itself and sends `Last-Event-ID`, so the server resumes
 * where the page left off; when it cannot (`event: reset`) the `reset` handler reloads the state. `connected`
 * tells the page whether it is live.
 */
export function useEventStream(url: string | undefined, handlers: StreamHandlers): { connected: boolean } {
  const [connected, setConnected] = useState(false);
  const current = useRef(handlers);
  current.current = handlers;
  useEffect(() => {
    if (url === undefined) return;
    const source = new EventSource(url);
    source.onopen = () => setConnected(true);
    source.onerror = () => setConnected(false);
    const names = Object.keys(current.current);
    const listeners = names.map((name) => {
      const listener = (event: MessageEvent<string>) => {
        let data: unknown;
        try {
          data = JSON.parse(event.data);
        } catch {
          return;
        }
        current.current[name]?.(data, event.lastEventId);
      };
      source.addEventListener(name, listener as EventListener);
      return [name, listener] as const;
    });
    return () => {
      for (const [name, listener] of listeners) source.removeEventListener(name, listener as EventListener);
      source.close();
    };
  }, [url]);
  return { connected };
}

/** Calls `fn` every `ms` while the page is visible. */
export function useInterval(fn: () => void, ms: number): void {
  const current = useRef(fn);
  current.current = fn;
  useEffect(() => {
    const timer = setInterval(() => { if (document.visibilityState === 'visible') current.current(); }, ms);
    return () => clearInterval(timer);
  }, [ms]);
}
