import { Command } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { orgApi, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';
import { renderTable } from './sessions.js';

export function mutationsCommand(): Command {
  return new Command('mutations')
    .description('configuration mutations of one daemon host, newest first (needs a user token or API key of the org)')
    .requiredOption('--host <workerHostId>', 'the daemon host (worker id)')
    .option('--json', 'print the JSON the node answered')
    .option('--token <token>', 'user token or API key of the org (env TROUPE_TOKEN)')
    .action(async (opts: { host: string; json?: boolean; token?: string }, cmd: Command) => {
      const api = orgApi(cmd.optsWithGlobals() as ClientOptions);
      const reply = await unwrap(api.GET('/api/daemon/mutations', { params: { query: { workerHostId: opts.host } } }));
      if (opts.json) return printJson(reply);
      process.stdout.write(renderTable(reply.mutations, ['id', 'op', 'status', 'requestedBy', 'createdAt', 'deliveredAt', 'cancelledAt', 'params']));
    });
}
