import { Command } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { adminApi, CliFinding, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';

export function auditCommands(): Command {
  const audit = new Command('audit').description("an org's hash-chained audit log");
  audit
    .command('verify')
    .description('recompute the chain; exits 2 when a link is broken (firstBrokenSeq says where)')
    .requiredOption('--org <orgId>', 'org id')
    .action(async (opts: { org: string }, cmd: Command) => {
      const api = adminApi(cmd.optsWithGlobals() as ClientOptions);
      const result = await unwrap(api.GET('/api/admin/orgs/{orgId}/audit/verify', { params: { path: { orgId: opts.org } } }));
      printJson(result);
      if (result.valid === false) throw new CliFinding(2);
    });
  return audit;
}
