import { Command, InvalidArgumentError, Option } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { adminApi, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';

const orgRoles = ['owner', 'admin', 'member', 'viewer'] as const;
const projectRoles = ['admin', 'editor', 'viewer'] as const;
type ProjectRole = { id: string; role: (typeof projectRoles)[number] };

const projectRole = (value: string, previous: ProjectRole[] = []): ProjectRole[] => {
  const [id, role] = value.split(':');
  const known = projectRoles.find((r) => r === role);
  if (!id || !known) throw new InvalidArgumentError('expected <projectId>:<admin|editor|viewer>');
  return [...previous, { id, role: known }];
};

export function userCommands(): Command {
  const user = new Command('user').description('users of an org');
  user
    .command('create')
    .description('add a user to an org with a role; prints the user and a user token')
    .requiredOption('--org <orgId>', 'org id')
    .requiredOption('--email <email>', 'email')
    .addOption(new Option('--role <role>', 'role in the org').choices(orgRoles).default('member'))
    .option('--password <password>', 'password for browser login')
    .option('--project <projectId:role>', 'project role, repeatable', projectRole)
    .action(async (opts: { org: string; email: string; role: (typeof orgRoles)[number]; password?: string; project?: ProjectRole[] }, cmd: Command) => {
      const body = {
        email: opts.email,
        role: opts.role,
        ...(opts.password ? { password: opts.password } : {}),
        ...(opts.project ? { projects: opts.project } : {}),
      };
      const api = adminApi(cmd.optsWithGlobals() as ClientOptions);
      printJson(await unwrap(api.POST('/api/admin/orgs/{orgId}/users', { params: { path: { orgId: opts.org } }, body })));
    });
  return user;
}
