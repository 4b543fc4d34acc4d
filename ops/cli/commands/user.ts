import { Command, InvalidArgumentError } from 'commander';
import { request, resolveAdminToken, resolveUrl, type ClientOptions } from '../client.js';
import { printJson } from '../main.js';

const projectRole = (value: string, previous: Array<{ id: string; role: string }> = []) => {
  const [id, role] = value.split(':');
  if (!id || !role || !['admin', 'editor', 'viewer'].includes(role)) {
    throw new InvalidArgumentError('expected <projectId>:<admin|editor|viewer>');
  }
  return [...previous, { id, role }];
};

export function userCommands(): Command {
  const user = new Command('user').description('users of an org');
  user
    .command('create')
    .description('add a user to an org with a role; prints the user and a user token')
    .requiredOption('--org <orgId>', 'org id')
    .requiredOption('--email <email>', 'email')
    .option('--role <role>', 'owner | admin | member | viewer', 'member')
    .option('--password <password>', 'password for browser login')
    .option('--project <projectId:role>', 'project role, repeatable', projectRole)
    .action(async (opts: { org: string; email: string; role: string; password?: string; project?: Array<{ id: string; role: string }> }, cmd: Command) => {
      const global = cmd.optsWithGlobals() as ClientOptions;
      const body = {
        email: opts.email,
        role: opts.role,
        ...(opts.password ? { password: opts.password } : {}),
        ...(opts.project ? { projects: opts.project } : {}),
      };
      printJson(await request(resolveUrl(global), 'POST', `/api/admin/orgs/${encodeURIComponent(opts.org)}/users`, resolveAdminToken(global), body));
    });
  return user;
}
