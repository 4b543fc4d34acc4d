import { Command } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { orgApi, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';

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
      const body = { name: opts.name, ...(opts.scope ? { scopes: opts.scope } : {}) };
      const api = orgApi(cmd.optsWithGlobals() as ClientOptions);
      printJson(await unwrap(api.POST('/api/org/{orgId}/keys', { params: { path: { orgId: opts.org } }, body })));
    });
  key
    .command('revoke')
    .description('revoke an API key; it stops working at once')
    .requiredOption('--org <orgId>', 'org id')
    .requiredOption('--id <keyId>', 'key id')
    .option('--token <token>', 'user token or API key of the org (env TROUPE_TOKEN)')
    .action(async (opts: { org: string; id: string; token?: string }, cmd: Command) => {
      const api = orgApi(cmd.optsWithGlobals() as ClientOptions);
      printJson(await unwrap(api.DELETE('/api/org/{orgId}/keys/{id}', { params: { path: { orgId: opts.org, id: opts.id } } })));
    });
  return key;
}
