import { Command } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { orgApi, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';
import { flatten, renderTable } from './sessions.js';

export function fleetCommand(): Command {
  return new Command('fleet')
    .description("live worker fleet and session queue of the org (GET /api/fleet/stats; needs a user token or API key)")
    .option('--json', 'print the JSON the node answered')
    .option('--token <token>', 'user token or API key of the org (env TROUPE_TOKEN)')
    .action(async (opts: { json?: boolean; token?: string }, cmd: Command) => {
      const stats = await unwrap(orgApi(cmd.optsWithGlobals() as ClientOptions).GET('/api/fleet/stats'));
      if (opts.json) return printJson(stats);
      process.stdout.write(renderTable(flatten(stats).map(({ key, value }) => ({ figure: key, value })), ['figure', 'value']));
    });
}
