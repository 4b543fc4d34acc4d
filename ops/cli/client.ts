import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The CLI talks to a running node over HTTP. The node's URL and the credential come from flags, then the
 * environment, then (for the admin token on embedded defaults) the file the node generated in its data dir.
 */
export interface ClientOptions {
  url?: string;
  adminToken?: string;
  token?: string;
  dataDir?: string;
}

export class CliError extends Error {
  constructor(message: string, readonly status?: number, readonly body?: unknown) {
    super(message);
  }
}

/** Not a failure: the command printed its result, and the exit code tells a script what it found. */
export class CliFinding extends Error {
  constructor(readonly exitCode: number) {
    super(`finding (exit ${exitCode})`);
  }
}

export function resolveUrl(opts: ClientOptions): string {
  return (opts.url ?? process.env.TROUPE_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`).replace(/\/+$/, '');
}

export function resolveAdminToken(opts: ClientOptions): string {
  if (opts.adminToken) return opts.adminToken;
  if (process.env.TROUPE_ADMIN_TOKEN) return process.env.TROUPE_ADMIN_TOKEN;
  const file = path.resolve(opts.dataDir ?? process.env.TROUPE_DATA_DIR ?? './data', 'admin-token');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    throw new CliError(`no admin token: pass --admin-token, set TROUPE_ADMIN_TOKEN, or run where ${file} exists`);
  }
}

export function resolveToken(opts: ClientOptions): string {
  const token = opts.token ?? process.env.TROUPE_TOKEN;
  if (!token) throw new CliError('no credential: pass --token or set TROUPE_TOKEN (a user token or API key of the org)');
  return token;
}

export async function request(url: string, method: string, route: string, bearer: string, body?: unknown): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(`${url}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new CliError(`cannot reach Troupe at ${url}: ${(err as Error).message}`);
  }
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON: keep the text for the message below.
  }
  if (!response.ok) {
    const reason = (parsed as { error?: string; code?: string } | null)?.error ?? text;
    const code = (parsed as { code?: string } | null)?.code;
    throw new CliError(`${method} ${route} failed: ${response.status}${code ? ` ${code}` : ''}: ${reason}`, response.status, parsed);
  }
  return parsed;
}
