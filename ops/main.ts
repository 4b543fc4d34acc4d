import { ConfigError, loadConfig } from './config.js';
import type { Config } from './kernel/config.js';
import { createLogger } from './kernel/logger.js';
import { nodeSupport } from './kernel/node-support.js';
import { generateAdminToken, generateMasterKey, loadOrCreateSecretFile } from './secrets.js';
import { startNode } from './node.js';
import { armShutdownDeadline } from './shutdown-deadline.js';

/**
 * `npm start`: one node from the environment. On embedded defaults the master key and admin token are created
 * once in the data dir; the log says where the admin token is, never what it is.
 */
async function main(): Promise<void> {
  const runtime = nodeSupport();
  if (runtime.verdict === 'refused') {
    process.stderr.write(`troupe: ${runtime.line}\n`);
    process.exit(1);
  }
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
  if (runtime.verdict === 'end-of-life') log.warn({ nodeVersion: process.version }, runtime.line);

  const masterKey = config.masterKey ?? loadOrCreateSecretFile(config.dataDir, 'master-key', generateMasterKey).value;
  let adminToken = config.adminToken;
  if (!adminToken) {
    const file = loadOrCreateSecretFile(config.dataDir, 'admin-token', generateAdminToken);
    adminToken = file.value;
    log.info({ file: file.file, created: file.created }, 'platform admin token is in this file (mode 0600)');
  }
  config = loadConfig(process.env, { masterKey, adminToken });

  // Listened for before the start: the node logs 'troupe node ready' inside startNode, and a supervisor that stops it
  // at once could signal before this function resumes, when no handler was there yet and the signal's default action
  // killed the node without a shutdown (the SIGINT test saw exit code null). A signal that comes while the node
  // starts is held and acted on once it is up; the deadline is armed at once, so a start that hangs still ends.
  const delayOf = (signal: StopSignal): number => (signal === 'SIGTERM' ? config.shutdownDelayMs : 0);
  // Armed by the first signal and kept: a later SIGINT only shortens the delay.
  let armedDeadlineMs: number | undefined;
  const armDeadlineFor = (signal: StopSignal): number => {
    if (armedDeadlineMs === undefined) {
      armedDeadlineMs = config.shutdownDeadlineMs ?? delayOf(signal) + config.shutdownGraceMs + DEADLINE_ALLOWANCE_MS;
      armShutdownDeadline(armedDeadlineMs, log);
    }
    return armedDeadlineMs;
  };
  let held: StopSignal | undefined;
  let onSignal = (signal: StopSignal): void => {
    armDeadlineFor(signal);
    if (held !== 'SIGINT') held = signal;
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  const node = await startNode(config, { log });

  // SIGTERM (an orchestrator's stop): readiness turns 503 at once, the node keeps serving for the delay so load
  // balancers notice, then drains within the grace. SIGINT (a person at a terminal) skips the delay, and a SIGINT
  // during a SIGTERM's delay cuts it short. The whole shutdown is bounded by the deadline (decision 0040).
  let stopping = false;
  let skipDelay: () => void = () => undefined;
  const stop = async (signal: StopSignal) => {
    if (stopping) {
      if (signal === 'SIGINT') skipDelay();
      return;
    }
    stopping = true;
    node.beginDrain();
    const delayMs = delayOf(signal);
    const deadlineMs = armDeadlineFor(signal);
    log.info({ signal, delayMs, graceMs: config.shutdownGraceMs, deadlineMs }, 'shutting down: readiness is 503, serving until the delay ends, then draining');
    if (delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        skipDelay = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      log.info('shutdown delay over: draining requests');
    }
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
  onSignal = (signal) => void stop(signal);
  if (held !== undefined) void stop(held);
}

type StopSignal = 'SIGTERM' | 'SIGINT';

/** What closing storage, the transport and the actors may take beyond the request drain. */
const DEADLINE_ALLOWANCE_MS = 10_000;

main().catch((err: unknown) => {
  process.stderr.write(`troupe: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
