import type { ErrorBody } from './api-types.js';

/**
 * The page's one way to the API: same origin, the session cookie, JSON both ways. Every refusal becomes an ApiError
 * carrying the message the server wrote, so the page shows what the API said, never a blank. A 401 means the
 * session ended: listeners (the shell) send the person back to sign-in.
 */
export class ApiError extends Error {
  /** `details` is the error body's machine-readable part, e.g. the `field` a validation error is about. */
  constructor(readonly status: number, message: string, readonly code: string | undefined, readonly details?: Record<string, unknown>) {
    super(message);
  }
}

type SessionEndedListener = () => void;
const sessionEndedListeners = new Set<SessionEndedListener>();

export function onSessionEnded(listener: SessionEndedListener): () => void {
  sessionEndedListeners.add(listener);
  return () => sessionEndedListeners.delete(listener);
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'The node cannot be reached. Check that it is running, then try again.', undefined);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    // A refusal from something in front of the node (a proxy's page) is not the API's error body, so nothing in it is certain.
    const error = parsed as Partial<ErrorBody> | undefined;
    if (response.status === 401 && path !== '/api/auth/login') for (const listener of sessionEndedListeners) listener();
    throw new ApiError(response.status, error?.error ?? `The server answered ${response.status} ${response.statusText}`, error?.code, error?.details);
  }
  return parsed as T;
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body?: unknown) => api<T>('POST', path, body);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const del = <T>(path: string) => api<T>('DELETE', path);

/** Builds `path?query` from the defined, non-empty values. */
export function withQuery(path: string, query: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}
