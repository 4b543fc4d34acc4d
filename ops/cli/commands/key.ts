import { Command } from 'commander';
import { request, resolveToken, resolveUrl, type ClientOptions } from '../client.js';
import { printJson } from '../main.js';

export function keyCommands(): Command {
  const key = new Command('key').description("an org's API keys (needs a credential of an org admin or owner)");
  key
    .command('create')
    .description('issue an API key; the full key is printed once and cannot be shown again')
    .requiredOption('--org <orgId>', 'org id')
    .requiredOption('--name <name>', 'what the key is for')
    .option('--scope <scope...>', 'scopes to grant')
    .option('--token <token>', 'user token or API key of the org (env TROUPE_TOKEN)')
    .action(async (opts: { org: string; name: string; scope?: string[]; token?: string }, cmd: Command) => {
      const global = cmd.optsWithGlobals() as ClientOptions & { token?: string };
      const body = { name: opts.name, ...(opts.scope ? { scopes: opts.scope } : {}) };
      printJson(await request(resolveUrl(global), 'POST', `/api/org/${encodeURIComponent(opts.org)}/keys`, resolveToken(global), body));
    });
  key
    .command('revoke')
    .description('revoke an API key; it stops working at once')
    .requiredOption('--org <orgId>', 'org id')
    .requiredOption('--id <keyId>', 'key id')
    .option('--token <token>', 'user token or API key of the org (env TROUPE_TOKEN)')
    .action(async (opts: { org: string; id: string; token?: string }, cmd: Command) => {
      const global = cmd.optsWithGlobals() as ClientOptions & { token?: string };
      printJson(await request(resolveUrl(global), 'DELETE', `/api/org/${encodeURIComponent(opts.org)}/keys/${encodeURIComponent(opts.id)}`, resolveToken(global)));
    });
  return key;
}
