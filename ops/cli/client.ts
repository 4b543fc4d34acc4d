import { readFileSync } from 'node:fs';
import { CommanderError } from 'commander';
import path from 'node:path';
import { createTroupeClient, type TroupeApi } from '../../http/client/index.js';

/**
 * The CLI talks to a running node through the typed client (http/client). The node's URL and the credential come
 * from flags, then the environment, then (for the admin token on embedded defaults) the file the node generated in
 * its data dir.
 */
export interface ClientOptions {
  url?: string;
  adminToken?: string;
  token?: string;
  dataDir?: string;
}

/** A failure the CLI explains itself (a missing credential, a bad flag): one line on stderr, exit 1. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
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

/** The API with the platform admin token. */
export function adminApi(opts: ClientOptions): TroupeApi {
  return createTroupeClient({ baseUrl: resolveUrl(opts), token: resolveAdminToken(opts) });
}

/** The API with an org credential (a user token or API key). */
export function orgApi(opts: ClientOptions): TroupeApi {
  return createTroupeClient({ baseUrl: resolveUrl(opts), token: resolveToken(opts) });
}

/**
 * The exit code for what a command threw, with its one line on stderr where there is something to say: Commander's
 * own (usage, --help), a finding (exit code only), a CLI refusal, or else `unexpected` (the node's refusals in `troupe`).
 */
export function exitCodeOf(err: unknown, program: string, unexpected: (err: unknown) => number | undefined = () => undefined): number {
  if (err instanceof CommanderError) return err.exitCode;
  if (err instanceof CliFinding) return err.exitCode;
  if (err instanceof CliError) {
    process.stderr.write(`${program}: ${err.message}\n`);
    return err.exitCode;
  }
  const known = unexpected(err);
  if (known !== undefined) return known;
  process.stderr.write(`${program}: ${(err as Error).stack ?? String(err)}\n`);
  return 1;
}
