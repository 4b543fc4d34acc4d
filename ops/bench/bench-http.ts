import http from 'node:http';

/**
 * The lifecycle benches' HTTP client: one keep-alive agent for the whole run (thousands of sockets: every closed-loop
 * client holds its own), JSON in and out, a 30 s deadline a call.
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: 4096 });

export interface Reply { readonly status: number; readonly body: any }

export function send(base: URL, method: 'POST' | 'PUT', pathname: string, token: string, body: unknown): Promise<Reply> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: base.hostname, port: base.port, path: pathname, method, agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => {
        let parsed: unknown;
        try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = text; }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${pathname} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

export const post = (base: URL, pathname: string, token: string, body: unknown): Promise<Reply> => send(base, 'POST', pathname, token, body);

/** The reply's body, or a thrown error naming the call and what it answered. */
export async function ok(base: URL, pathname: string, token: string, body: unknown, method: 'POST' | 'PUT' = 'POST'): Promise<any> {
  const r = await send(base, method, pathname, token, body);
  if (r.status >= 300) throw new Error(`${method} ${pathname} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Closes the kept-alive sockets at the end of a run. */
export const closeConnections = (): void => agent.destroy();
