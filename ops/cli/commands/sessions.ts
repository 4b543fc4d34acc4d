import { Command } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { CliError, orgApi, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';

/**
 * Operator views print a readable table on a terminal and the route's JSON with `--json` (or when stdout is not a
 * terminal is irrelevant: scripts ask for JSON explicitly, so a pipe to `less` stays readable).
 */

/** Columns sized to their widest cell; values that are not strings are shown as JSON; nulls as '-'. */
export function renderTable(rows: readonly Record<string, unknown>[], columns: readonly string[]): string {
  const cell = (v: unknown): string => (v === null || v === undefined ? '-' : typeof v === 'string' ? v : JSON.stringify(v));
  const body = rows.map((r) => columns.map((c) => cell(r[c]).replace(/[\r\n\t]/g, ' ')));
  const widths = columns.map((c, i) => Math.max(c.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]): string => cells.map((s, i) => s.padEnd(widths[i]!)).join('  ').trimEnd();
  const header = columns.map((c) => c.toUpperCase());
  return [line(header), ...body.map(line)].join('\n') + '\n';
}

/** `{a: {b: 1}}` → `[{key: 'a.b', value: 1}]`, for showing a nested figure object as a two-column table. */
export function flatten(value: unknown, prefix = ''): { key: string; value: unknown }[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [{ key: prefix || '(value)', value }];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => flatten(v, prefix ? `${prefix}.${k}` : k));
}

export const SESSION_STATUSES = ['pending', 'claimed', 'running', 'paused', 'finalizing', 'completed', 'failed', 'stopped'] as const;
type SessionStatus = (typeof SESSION_STATUSES)[number];

function sessionStatus(value: string): SessionStatus {
  if (!(SESSION_STATUSES as readonly string[]).includes(value)) throw new CliError(`--status must be one of ${SESSION_STATUSES.join(', ')}, got ${JSON.stringify(value)}`);
  return value as SessionStatus;
}

export function sessionsCommand(): Command {
  return new Command('sessions')
    .description("the org's sessions, most recently active first (needs a user token or API key of the org)")
    .option('--status <status>', `only sessions in this status (${SESSION_STATUSES.join(', ')})`)
    .option('--limit <n>', 'at most this many (1-500)', '100')
    .option('--json', 'print the JSON the node answered')
    .option('--token <token>', 'user token or API key of the org (env TROUPE_TOKEN)')
    .action(async (opts: { status?: string; limit: string; json?: boolean; token?: string }, cmd: Command) => {
      const status = opts.status === undefined ? undefined : sessionStatus(opts.status);
      const api = orgApi(cmd.optsWithGlobals() as ClientOptions);
      const reply = await unwrap(api.GET('/api/fleet/sessions', { params: { query: { limit: opts.limit, ...(status ? { status } : {}) } } }));
      if (opts.json) return printJson(reply);
      process.stdout.write(renderTable(reply.sessions, ['id', 'status', 'phase', 'provider', 'trackerIssue', 'workerHostname', 'costUsd', 'updatedAt']));
    });
}
