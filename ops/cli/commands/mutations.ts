import { Command } from 'commander';
import { request, resolveToken, resolveUrl, type ClientOptions } from '../client.js';
import { printJson } from '../main.js';
import { renderTable } from './sessions.js';

export function mutationsCommand(): Command {
  return new Command('mutations')
    .description('configuration mutations of one daemon host, newest first (needs a user token or API key of the org)')
    .requiredOption('--host <workerHostId>', 'the daemon host (worker id)')
    .option('--json', 'print the JSON the node answered')
    .option('--token <token>', 'user token or API key of the org (env TROUPE_TOKEN)')
    .action(async (opts: { host: string; json?: boolean; token?: string }, cmd: Command) => {
      const global = cmd.optsWithGlobals() as ClientOptions & { token?: string };
      const route = `/api/daemon/mutations?${new URLSearchParams({ workerHostId: opts.host })}`;
      const reply = await request(resolveUrl(global), 'GET', route, resolveToken(global)) as { mutations: Record<string, unknown>[] };
      if (opts.json) return printJson(reply);
      process.stdout.write(renderTable(reply.mutations, ['id', 'op', 'status', 'requestedBy', 'createdAt', 'deliveredAt', 'cancelledAt', 'params']));
    });
}
