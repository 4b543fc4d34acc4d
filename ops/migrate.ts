import { loadConfig } from './config.js';
import { createDb } from '../storage/db.js';
import { migrate } from '../storage/migrations/runner.js';

/**
 * Applies pending migrations to the node's storage (DATABASE_URL, or PGlite under the data dir) and says what it
 * applied. Node code, beside the node's start: `troupe migrate` loads it only when run, so the CLI and the worker
 * carry no storage (decision 0087).
 */
export async function migrateStorage(dataDir: string | undefined): Promise<{ applied: unknown; storage: 'postgres' | 'pglite' }> {
  const config = loadConfig(process.env, dataDir ? { dataDir } : {});
  const db = await createDb(config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir });
  try {
    const applied = await migrate(db);
    return { applied, storage: config.databaseUrl ? 'postgres' : 'pglite' };
  } finally {
    await db.destroy();
  }
}
