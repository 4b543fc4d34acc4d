/**
 * A `fetch` that follows a redirect only within the origin it was asked for. The worker sends its runtime token on
 * every call, and a server (or whatever answers in its name) that redirects it elsewhere would hand that token, the
 * session's output and the credential stream's position to another host: such a redirect is refused, told to
 * `onRefused`, and the call fails as if the server had not answered. Redirects within the origin (a proxy adding a
 * slash) are followed as fetch would, at most `MAX_HOPS` of them.
 */
export class RedirectRefused extends Error {}

const MAX_HOPS = 5;

/** Fetch's rule (WHATWG fetch, "HTTP-redirect fetch"): which redirects turn the request into a GET without a body. */
const becomesGet = (status: number, method: string): boolean =>
  (status === 303 && method !== 'GET' && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST');

export function sameOriginFetch(onRefused: (from: string, to: string) => void, send: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    let request = input instanceof Request ? input : new Request(input, init);
    const origin = new URL(request.url).origin;
    for (let hop = 0; ; hop++) {
      // Kept before sending: a redirect within the origin sends the same body again.
      const spare = request.clone();
      const response = await send(request, { ...init, redirect: 'manual' });
      const location = response.headers.get('location');
      if (response.status < 300 || response.status > 399 || response.status === 304 || location === null) return response;
      await response.body?.cancel().catch(() => undefined);
      let target: URL;
      try {
        target = new URL(location, request.url);
      } catch {
        throw new RedirectRefused(`refused a redirect to an unreadable location (${location.length} characters)`);
      }
      if (target.origin !== origin) {
        onRefused(request.url, target.href);
        throw new RedirectRefused(`refused a redirect from ${origin} to another origin, ${target.origin}: the worker's token stays with its server`);
      }
      if (hop >= MAX_HOPS) throw new RedirectRefused(`refused a redirect: more than ${MAX_HOPS} in a row`);
      request = becomesGet(response.status, spare.method)
        ? new Request(target, { method: 'GET', headers: withoutBodyHeaders(spare.headers), signal: spare.signal })
        : new Request(target, { method: spare.method, headers: spare.headers, body: spare.body, signal: spare.signal, duplex: 'half' } as RequestInit);
    }
  };
}

function withoutBodyHeaders(headers: Headers): Headers {
  const next = new Headers(headers);
  for (const name of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location']) next.delete(name);
  return next;
}
