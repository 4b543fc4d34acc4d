import { Command } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { adminApi, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';

export function orgCommands(): Command {
  const org = new Command('org').description('organisations (workspaces)');
  org
    .command('create')
    .description('create an org with its owner, a default project, an API key and a daemon registration token')
    .requiredOption('--name <name>', 'display name')
    .requiredOption('--owner <email>', "owner's email")
    .option('--slug <slug>', 'URL slug (default: derived from the name)')
    .option('--plan <plan>', 'plan name')
    .option('--owner-password <password>', "owner's password for browser login")
    .action(async (opts: { name: string; owner: string; slug?: string; plan?: string; ownerPassword?: string }, cmd: Command) => {
      const body = {
        name: opts.name,
        ...(opts.slug ? { slug: opts.slug } : {}),
        ...(opts.plan ? { plan: opts.plan } : {}),
        owner: { email: opts.owner, ...(opts.ownerPassword ? { password: opts.ownerPassword } : {}) },
      };
      printJson(await unwrap(adminApi(cmd.optsWithGlobals() as ClientOptions).POST('/api/admin/orgs', { body })));
    });
  return org;
}
