import type { UwsResponse } from './uws.js';

/**
 * The address a request came from, for limits keyed by source (failed logins, refused webhooks). With no trusted
 * proxy it is the socket's peer: X-Forwarded-For is the client's to write and is ignored. Behind `trustProxyHops`
 * proxies that each append the address they saw, the client is that many entries from the right of the header; a
 * header shorter than that was not written by our proxies, and the peer address is used.
 */
export function clientAddressOf(res: UwsResponse, forwardedFor: string | undefined, trustProxyHops: number): string {
  if (trustProxyHops > 0 && forwardedFor !== undefined) {
    const hops = forwardedFor.split(',').map((s) => s.trim()).filter(Boolean);
    const client = hops[hops.length - trustProxyHops];
    if (client !== undefined && client.length <= 64) return client;
  }
  return Buffer.from(res.getRemoteAddressAsText()).toString('latin1');
}
