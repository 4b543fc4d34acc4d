import { Command } from 'commander';
import { TroupeApiError, TroupeUnreachableError } from '../../http/client/index.js';
import { exitCodeOf } from './client.js';
import { orgCommands } from './commands/org.js';
import { userCommands } from './commands/user.js';
import { keyCommands } from './commands/key.js';
import { migrateCommand } from './commands/migrate.js';
import { fleetCommand } from './commands/fleet.js';
import { sessionsCommand } from './commands/sessions.js';
import { sessionCommands } from './commands/session.js';
import { mutationsCommand } from './commands/mutations.js';
import { clusterCommands } from './commands/cluster.js';
import { auditCommands } from './commands/audit.js';
import { deadLetterCommands } from './commands/dead-letters.js';
import { m2mCommands } from './commands/m2m.js';
import { workerCommand } from './worker/command.js';
import { mcpCommand } from './commands/mcp.js';

/**
 * `troupe <command>`: every command prints JSON on stdout (so scripts can pipe it to jq) and a one-line reason on
 * stderr with a non-zero exit when it fails.
 */
export function buildProgram(): Command {
  const program = new Command()
    .name('troupe')
    .description('Operate a Troupe node: provision orgs, users and keys, run workers, dispatch and follow agent sessions.')
    .option('--url <url>', 'node URL (env TROUPE_URL, default http://127.0.0.1:$PORT or 8080)')
    .option('--admin-token <token>', 'platform admin token (env TROUPE_ADMIN_TOKEN, default <data dir>/admin-token)')
    .option('--data-dir <dir>', 'data dir of an embedded node (env TROUPE_DATA_DIR, default ./data)')
    .showHelpAfterError()
    .exitOverride();
  program.addCommand(orgCommands());
  program.addCommand(userCommands());
  program.addCommand(keyCommands());
  program.addCommand(migrateCommand());
  program.addCommand(fleetCommand());
  program.addCommand(sessionsCommand());
  program.addCommand(sessionCommands());
  program.addCommand(mutationsCommand());
  program.addCommand(clusterCommands());
  program.addCommand(auditCommands());
  program.addCommand(deadLetterCommands());
  program.addCommand(m2mCommands());
  program.addCommand(workerCommand());
  program.addCommand(mcpCommand());
  return program;
}

export async function runCli(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    return exitCodeOf(err, 'troupe', (refusal) => {
      // The node refused (4xx/5xx with its {error, code}) or could not be reached: its reason, on one line.
      if (!(refusal instanceof TroupeApiError || refusal instanceof TroupeUnreachableError)) return undefined;
      process.stderr.write(`troupe: ${refusal.message.replace(/\s*\n\s*/g, ' ')}\n`);
      return 1;
    });
  }
}

