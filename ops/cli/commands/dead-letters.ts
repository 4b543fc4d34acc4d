import { Command, Option } from 'commander';
import { unwrap } from '../../../http/client/index.js';
import { adminApi, CliError, CliFinding, type ClientOptions } from '../client.js';
import { printJson } from '../print-json.js';

interface SelectionOptions {
  id?: string[];
  all?: boolean;
}

/** `--id a b c` or `--all`, never both and never neither: an empty selection must not mean "everything". */
function selection(opts: SelectionOptions): { ids: string[] } | { all: true } {
  if (opts.all && opts.id) throw new CliError('give either --id or --all, not both');
  if (opts.all) return { all: true };
  if (opts.id && opts.id.length > 0) return { ids: opts.id };
  throw new CliError('say which dead letters: --id <id...> (from `troupe dead-letters list`) or --all');
}

function withSelection(command: Command): Command {
  return command
    .addOption(new Option('--id <ids...>', 'dead-letter ids, as `troupe dead-letters list` prints them'))
    .addOption(new Option('--all', 'every dead letter there is'));
}

/**
 * `troupe dead-letters list|replay|purge` (decision 0048): the messages no node could handle. Replay and purge print
 * what they did and exit 2 when an id asked for was not found or could not be replayed.
 */
export function deadLetterCommands(): Command {
  const deadLetters = new Command('dead-letters').description('messages no node could handle: list, replay, purge');
  deadLetters
    .command('list')
    .description('dead letters oldest first, with the total kept, the bound and whether dead-lettering is at-least-once')
    .option('--limit <n>', 'at most this many (0-1000)', '50')
    .action(async (opts: { limit: string }, cmd: Command) => {
      if (!/^\d+$/.test(opts.limit)) throw new CliError('--limit takes a whole number from 0 to 1000');
      const api = adminApi(cmd.optsWithGlobals() as ClientOptions);
      printJson(await unwrap(api.GET('/api/admin/dead-letters', { params: { query: { limit: Number(opts.limit) } } })));
    });
  withSelection(deadLetters.command('replay'))
    .description('send dead letters to their addresses again, as tells (whoever asked stopped waiting long ago)')
    .action(async (opts: SelectionOptions, cmd: Command) => {
      const api = adminApi(cmd.optsWithGlobals() as ClientOptions);
      const outcome = await unwrap(api.POST('/api/admin/dead-letters/replay', { body: selection(opts) }));
      printJson(outcome);
      if (outcome.notFound.length > 0 || outcome.unreadable.length > 0) throw new CliFinding(2);
    });
  withSelection(deadLetters.command('purge'))
    .description('remove dead letters for good')
    .action(async (opts: SelectionOptions, cmd: Command) => {
      const api = adminApi(cmd.optsWithGlobals() as ClientOptions);
      const outcome = await unwrap(api.POST('/api/admin/dead-letters/purge', { body: selection(opts) }));
      printJson(outcome);
      if (outcome.notFound.length > 0) throw new CliFinding(2);
    });
  return deadLetters;
}
