import { Command } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { adminApi, CliError, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';

/** Checked here rather than by a commander parser: a parser's refusal would exit the process, not return a code. */
function overlapBody(overlap: string | undefined): { overlapSeconds?: number } {
  if (overlap === undefined) return {};
  if (!/^\d{1,7}$/.test(overlap)) throw new CliError(`--overlap must be a whole number of seconds, got ${JSON.stringify(overlap)}`);
  return { overlapSeconds: Number(overlap) };
}

/** `troupe m2m …`: operate OAuth client_credentials clients with the platform admin token (decision 0017). */
export function m2mCommands(): Command {
  const m2m = new Command('m2m').description('machine clients (OAuth client_credentials), with the platform admin token');
  const api = (cmd: Command) => adminApi(cmd.optsWithGlobals() as ClientOptions);
  m2m
    .command('list')
    .description("an org's machine clients and their secrets' lifetimes (never a secret)")
    .requiredOption('--org <orgId>', 'org id')
    .action(async (opts: { org: string }, cmd: Command) =>
      printJson(await unwrap(api(cmd).GET('/api/admin/m2m-clients', { params: { query: { orgId: opts.org } } }))));
  m2m
    .command('rotate <clientId>')
    .description('issue a new secret (printed once); older secrets keep working for the overlap, then stop')
    .option('--overlap <seconds>', 'how long older secrets keep working (0..604800, default 86400)')
    .action(async (clientId: string, opts: { overlap?: string }, cmd: Command) => {
      const body = overlapBody(opts.overlap);
      printJson(await unwrap(api(cmd).POST('/api/admin/m2m-clients/{clientId}/rotate', { params: { path: { clientId } }, body })));
    });
  m2m
    .command('revoke <clientId>')
    .description('revoke a client: no new tokens, and tokens already issued stop working at once')
    .action(async (clientId: string, _opts: unknown, cmd: Command) =>
      printJson(await unwrap(api(cmd).DELETE('/api/admin/m2m-clients/{clientId}', { params: { path: { clientId } } }))));
  return m2m;
}
