import { Command } from 'commander';
import { printJson } from '../print-json.js';

/**
 * `troupe migrate` runs the node's own migration step (ops/migrate.ts), loaded when the command runs: every other
 * command (a long-running `troupe worker` above all) would otherwise carry knex, pg and PGlite in memory for nothing
 * (about 60 MB of RSS).
 */
export function migrateCommand(): Command {
  return new Command('migrate')
    .description('apply pending database migrations (DATABASE_URL, or PGlite under TROUPE_DATA_DIR); nodes also do this at start')
    .action(async (_opts: unknown, cmd: Command) => {
      const { migrateStorage } = await import('../../migrate.js');
      const global = cmd.optsWithGlobals() as { dataDir?: string };
      printJson(await migrateStorage(global.dataDir));
    });
}
