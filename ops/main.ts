import { ConfigError, loadConfig } from './config.js';
import type { Config } from './kernel/config.js';
import { createLogger } from './kernel/logger.js';
import { generateAdminToken, generateMasterKey, loadOrCreateSecretFile } from './secrets.js';
import { startNode } from './node.js';

/**
 * `npm start`: one node from the environment. On embedded defaults the master key and admin token are created
 * once in the data dir; the log says where the admin token is, never what it is.
 */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`troupe: ${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
  const log = createLogger({ level: config.logLevel, nodeId: config.nodeId });

  const masterKey = config.masterKey ?? loadOrCreateSecretFile(config.dataDir, 'master-key', generateMasterKey).value;
  let adminToken = config.adminToken;
  if (!adminToken) {
    const file = loadOrCreateSecretFile(config.dataDir, 'admin-token', generateAdminToken);
    adminToken = file.value;
    log.info({ file: file.file, created: file.created }, 'platform admin token is in this file (mode 0600)');
  }
  config = loadConfig(process.env, { masterKey, adminToken });

  const node = await startNode(config, { log });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: draining requests');
    node.close().then(
      () => {
        log.info('shutdown complete');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`troupe: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
