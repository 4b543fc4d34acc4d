import { Command } from 'commander';
import { loadConfig } from '../../config.js';
import { createDb } from '../../../storage/db.js';
import { migrate } from '../../../storage/migrations/runner.js';
import { printJson } from '../main.js';

/** Runs the migrations directly against the node's storage (DATABASE_URL, or PGlite under the data dir). */
export function migrateCommand(): Command {
  return new Command('migrate')
    .description('apply pending database migrations (DATABASE_URL, or PGlite under TROUPE_DATA_DIR); nodes also do this at start')
    .action(async (_opts: unknown, cmd: Command) => {
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
