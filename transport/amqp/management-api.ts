/**
 * The RabbitMQ management HTTP API (plugin `rabbitmq_management`), for what AMQP cannot do: read a queue's
 * effective settings and set policies. Optional everywhere: callers say what they could not do without it.
 */

export interface ManagementApi {
  /** http://user:pass@host:15672 */
  readonly url: string;
  readonly vhost: string;
}

/** The management URL next to an AMQP URL: same host and credentials, port 15672. */
export function managementUrlFor(amqpUrl: string): string {
  const amqp = new URL(amqpUrl);
  const http = new URL(`${amqp.protocol === 'amqps:' ? 'https' : 'http'}://${amqp.hostname}:15672`);
  http.username = amqp.username || 'guest';
  http.password = amqp.password || 'guest';
  return http.toString().replace(/\/$/, '');
}

/** The vhost an AMQP URL names (`/` when its path is empty). */
export function vhostOf(amqpUrl: string): string {
  const path = new URL(amqpUrl).pathname;
  return path === '' || path === '/' ? '/' : decodeURIComponent(path.slice(1));
}

/**
 * One call; `path` may hold `{vhost}`, replaced by the encoded vhost. Answers the parsed JSON body (undefined for an
 * empty one) and throws with the status on anything but 2xx.
 */
export async function managementCall(api: ManagementApi, method: 'GET' | 'PUT' | 'DELETE', path: string, body?: unknown, timeoutMs = 2_000): Promise<unknown> {
  const base = new URL(api.url);
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`;
  const url = `${base.protocol}//${base.host}${path.replace('{vhost}', encodeURIComponent(api.vhost))}`;
  const res = await fetch(url, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`management API ${method} ${path} answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`);
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}
