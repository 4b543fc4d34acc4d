import type { Command } from 'commander';
import { CliError, CliFinding, orgApi, type ClientOptions } from '../client.js';
import { readTranscript, renderEntry } from '../session-transcript.js';

/**
 * `troupe session transcript <sessionId> [--follow] [--after N] [--search TEXT] [--json]`: the session's whole
 * transcript (issue 35 §1). Text: the agent's output as it printed it, prompts, tool steps, status changes and notices
 * marked with their seq and time; `--json`: one entry a line, as the API has it.
 */
export function addTranscriptCommand(session: Command, tokenHelp: string): void {
  session
    .command('transcript <sessionId>')
    .description('print the whole transcript of a session: output, prompts, tool steps, status changes (--follow: live until it ends)')
    .option('--follow', 'keep printing new entries until the session ends')
    .option('--after <seq>', 'start after this seq (default 0: from the start)')
    .option('--search <text>', 'only entries whose text contains this (any case)')
    .option('--json', 'print one JSON object a line (each entry as the API has it)')
    .option('--token <token>', tokenHelp)
    .addHelpText('after', '\nExit codes: 0 done, 1 refused or unreachable, 130 interrupted (Ctrl-C stops following, not the session).')
    .action(async (id: string, opts: { follow?: boolean; after?: string; search?: string; json?: boolean }, cmd: Command) => {
      const after = opts.after === undefined ? 0 : Number(opts.after);
      if (!Number.isSafeInteger(after) || after < 0 || (opts.after !== undefined && !/^\d+$/.test(opts.after))) {
        throw new CliError('--after must be a seq: a whole number from 0');
      }
      const api = orgApi(cmd.optsWithGlobals() as ClientOptions);
      const interrupted = new AbortController();
      const onSigint = () => interrupted.abort();
      process.once('SIGINT', onSigint);
      try {
        await readTranscript(api, id, (entry) => {
          process.stdout.write(opts.json ? `${JSON.stringify(entry)}\n` : renderEntry(entry));
        }, { after, follow: opts.follow === true, signal: interrupted.signal, ...(opts.search ? { search: opts.search } : {}) });
        if (interrupted.signal.aborted) throw new CliFinding(130);
      } finally {
        process.off('SIGINT', onSigint);
      }
    });
}
