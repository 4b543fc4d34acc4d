import { Command } from 'commander';
import { CliError, request, resolveAdminToken, resolveUrl, type ClientOptions } from '../client.js';
import { printJson } from '../main.js';

/** Checked here rather than by a commander parser: a parser's refusal would exit the process, not return a code. */
function overlapBody(overlap: string | undefined): { overlapSeconds?: number } {
  if (overlap === undefined) return {};
  if (!/^\d{1,7}$/.test(overlap)) throw new CliError(`--overlap must be a whole number of seconds, got ${JSON.stringify(overlap)}`);
  return { overlapSeconds: Number(overlap) };
}

/** `troupe m2m …`: operate OAuth client_credentials clients with the platform admin token (decision 0017). */
export function m2mCommands(): Command {
  const m2m = new Command('m2m').description('machine clients (OAuth client_credentials), with the platform admin token');
  const adminCall = async (cmd: Command, method: string, route: string, body?: unknown) => {
    const global = cmd.optsWithGlobals() as ClientOptions;
    printJson(await request(resolveUrl(global), method, route, resolveAdminToken(global), body));
  };
  m2m
    .command('list')
    .description("an org's machine clients and their secrets' lifetimes (never a secret)")
    .requiredOption('--org <orgId>', 'org id')
    .action((opts: { org: string }, cmd: Command) => adminCall(cmd, 'GET', `/api/admin/m2m-clients?orgId=${encodeURIComponent(opts.org)}`));
  m2m
    .command('rotate <clientId>')
    .description('issue a new secret (printed once); older secrets keep working for the overlap, then stop')
    .option('--overlap <seconds>', 'how long older secrets keep working (0..604800, default 86400)')
    .action((clientId: string, opts: { overlap?: string }, cmd: Command) =>
      adminCall(cmd, 'POST', `/api/admin/m2m-clients/${encodeURIComponent(clientId)}/rotate`, overlapBody(opts.overlap)));
  m2m
    .command('revoke <clientId>')
    .description('revoke a client: no new tokens, and tokens already issued stop working at once')
    .action((clientId: string, _opts: unknown, cmd: Command) => adminCall(cmd, 'DELETE', `/api/admin/m2m-clients/${encodeURIComponent(clientId)}`));
  return m2m;
}
