import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { classifyAddress, OutboundAllowList, parseAddress, type AddressClass } from './addresses.js';

/**
 * Every request Troupe makes to an address a user gave it (A2A agent cards, web-push endpoints, …) goes through
 * here (decision 0015). Before any connection: the scheme is http or https, the URL carries no credentials, the
 * host is resolved and every address it resolves to must be public unless the operator allowed the host or a CIDR
 * holding the address. The socket then connects to exactly the address that was checked (a pinned `lookup`), so a
 * second DNS answer cannot swap in an internal address between check and connect. Redirects are followed only to
 * the same host, each hop checked again; the whole exchange has one deadline and the body a byte cap.
 */

export type RefusalReason = 'scheme' | 'credentials' | 'address' | 'dns' | 'redirect' | 'timeout' | 'too-large' | 'network';

export class OutboundRefused extends Error {
  constructor(readonly reason: RefusalReason, message: string, readonly addressClass?: AddressClass) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

export interface OutboundRequest {
  readonly method?: 'GET' | 'POST' | 'DELETE';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Buffer | string;
  /** Deadline for the whole exchange, redirects included. @default 5000 */
  readonly timeoutMs?: number;
  /** Largest response body accepted. @default 1 MiB */
  readonly maxBytes?: number;
  /** Same-host redirects followed. @default 3 */
  readonly maxRedirects?: number;
}

export interface OutboundResponse {
  readonly status: number;
  /** Lower-cased names; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** The URL that answered, after any same-host redirects. */
  readonly url: string;
}

export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_BYTES = 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface VettedTarget {
  readonly url: URL;
  readonly address: string;
  readonly family: 4 | 6;
}

export class OutboundGuard {
  private readonly allow: OutboundAllowList;

  constructor(allowEntries: readonly string[], private readonly resolve: Resolver = systemResolver) {
    this.allow = new OutboundAllowList(allowEntries);
  }

  /** Checks a URL and picks the address to connect to; throws OutboundRefused. Makes no connection. */
  async vet(target: string | URL): Promise<VettedTarget> {
    let url: URL;
    try {
      url = typeof target === 'string' ? new URL(target) : target;
    } catch {
      throw new OutboundRefused('scheme', 'not an absolute URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundRefused('scheme', `scheme ${url.protocol} is not allowed`);
    if (url.username !== '' || url.password !== '') throw new OutboundRefused('credentials', 'URLs with credentials are not fetched');
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (host === '') throw new OutboundRefused('scheme', 'URL has no host');
    const hostAllowed = this.allow.allowsHost(host);

    const literal = parseAddress(host);
    let candidates: { address: string; family: number }[];
    if (literal) candidates = [{ address: host, family: literal.family }];
    else {
      try {
        candidates = await this.resolve(host);
      } catch {
        throw new OutboundRefused('dns', `could not resolve ${host}`);
      }
      if (candidates.length === 0) throw new OutboundRefused('dns', `${host} has no addresses`);
    }
    // Every address the name resolves to must pass, otherwise a name with one public and one internal record
    // would be a coin toss away from an internal request.
    for (const c of candidates) {
      const klass = classifyAddress(c.address);
      if (klass === undefined) throw new OutboundRefused('dns', `${host} resolved to an unparseable address`);
      if (klass !== 'public' && !hostAllowed && !this.allow.allowsAddress(c.address)) {
        throw new OutboundRefused('address', `${host} resolves to a ${klass} address`, klass);
      }
    }
    const chosen = candidates[0]!;
    return { url, address: chosen.address, family: chosen.family === 6 ? 6 : 4 };
  }

  async request(target: string, init: OutboundRequest = {}): Promise<OutboundResponse> {
    const deadline = Date.now() + (init.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const maxRedirects = init.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    let current = await this.vetBefore(target, deadline);
    for (let hop = 0; ; hop++) {
      const response = await exchange(current, init, deadline, init.maxBytes ?? DEFAULT_MAX_BYTES);
      if (!REDIRECTS.has(response.status) || response.headers.location === undefined) return response;
      if (hop >= maxRedirects) throw new OutboundRefused('redirect', 'too many redirects');
      let next: URL;
      try {
        next = new URL(response.headers.location, current.url);
      } catch {
        throw new OutboundRefused('redirect', 'redirect to an invalid URL');
      }
      if (next.hostname.toLowerCase() !== current.url.hostname.toLowerCase()) {
        throw new OutboundRefused('redirect', `redirect to another host (${next.hostname}) is not followed`);
      }
      current = await this.vetBefore(next, deadline);
    }
  }

  private async vetBefore(target: string | URL, deadline: number): Promise<VettedTarget> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new OutboundRefused('timeout', 'resolving the host took too long')), Math.max(deadline - Date.now(), 0));
    });
    try {
      return await Promise.race([this.vet(target), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function exchange(target: VettedTarget, init: OutboundRequest, deadline: number, maxBytes: number): Promise<OutboundResponse> {
  const { url, address, family } = target;
  // The socket connects to the vetted address whatever a fresh DNS answer would say; TLS still verifies the name.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (typeof options === 'object' && options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const body = init.body === undefined ? undefined : Buffer.from(init.body);
  const headers: Record<string, string> = { 'user-agent': 'Troupe', ...init.headers };
  if (body) headers['content-length'] = String(body.length);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<OutboundResponse>((resolve, reject) => {
    let settled = false;
    const fail = (err: OutboundRefused) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(err);
    };
    const req = client.request({
      protocol: url.protocol, hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || undefined,
      path: `${url.pathname}${url.search}`, method: init.method ?? 'GET', headers, lookup: pinned, agent: false,
    }, (res) => {
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) return fail(new OutboundRefused('too-large', `response of ${declared} bytes is over the ${maxBytes}-byte cap`));
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) return fail(new OutboundRefused('too-large', `response is over the ${maxBytes}-byte cap`));
        chunks.push(chunk);
      });
      res.on('error', () => fail(new OutboundRefused('network', 'the response was cut off')));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const flat: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
        }
        resolve({ status: res.statusCode ?? 0, headers: flat, body: Buffer.concat(chunks), url: url.toString() });
      });
    });
    const timer = setTimeout(() => fail(new OutboundRefused('timeout', 'no complete answer before the deadline')), Math.max(deadline - Date.now(), 0));
    req.on('error', (err: NodeJS.ErrnoException) => fail(new OutboundRefused('network', `request failed (${err.code ?? 'error'})`)));
    req.end(body);
  });
}
