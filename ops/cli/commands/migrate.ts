import { Command } from 'commander';
import { printJson } from '../main.js';

/**
 * Runs the migrations directly against the node's storage (DATABASE_URL, or PGlite under the data dir). Storage is
 * loaded when the command runs: every other command (a long-running `troupe worker` above all) would otherwise carry
 * knex, pg and PGlite in memory for nothing (about 60 MB of RSS).
 */
export function migrateCommand(): Command {
  return new Command('migrate')
    .description('apply pending database migrations (DATABASE_URL, or PGlite under TROUPE_DATA_DIR); nodes also do this at start')
    .action(async (_opts: unknown, cmd: Command) => {
      const [{ loadConfig }, { createDb }, { migrate }] = await Promise.all([
        import('../../config.js'), import('../../../storage/db.js'), import('../../../storage/migrations/runner.js'),
      ]);
      const global = cmd.optsWithGlobals() as { dataDir?: string };
      const config = loadConfig(process.env, global.dataDir ? { dataDir: global.dataDir } : {});
      const db = await createDb(config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir });
      try {
        const applied = await migrate(db);
        printJson({ applied, storage: config.databaseUrl ? 'postgres' : 'pglite' });
      } finally {
        await db.destroy();
      }
    });
}
