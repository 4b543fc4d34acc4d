import { Command } from 'commander';
import { CliFinding, request, resolveAdminToken, resolveUrl, type ClientOptions } from '../client.js';
import { printJson } from '../main.js';

export function auditCommands(): Command {
  const audit = new Command('audit').description("an org's hash-chained audit log");
  audit
    .command('verify')
    .description('recompute the chain; exits 2 when a link is broken (firstBrokenSeq says where)')
    .requiredOption('--org <orgId>', 'org id')
    .action(async (opts: { org: string }, cmd: Command) => {
      const global = cmd.optsWithGlobals() as ClientOptions;
      const result = await request(resolveUrl(global), 'GET', `/api/admin/orgs/${encodeURIComponent(opts.org)}/audit/verify`, resolveAdminToken(global));
      printJson(result);
      if ((result as { valid?: boolean }).valid === false) throw new CliFinding(2);
    });
  return audit;
}
