import { exitCodeOf } from '../client.js';
import { workerCommand } from './command.js';
import { mcpCommand } from '../commands/mcp.js';

/**
 * `troupe-worker`, the worker package's command (`npm run pack:worker`, issue 31): exactly `troupe worker`, with its
 * flags and environment, as a program of its own. It is bundled with what it imports and nothing else, so a team's
 * machine installs the worker without the server's packages. Started directly (PID 1 of a container, a systemd unit)
 * it gets SIGTERM itself and drains.
 */
export async function runWorkerCli(argv: string[]): Promise<number> {
  // `troupe-worker mcp`: the agent line's MCP server (decision 0088), which this worker names in TROUPE_MCP_COMMAND.
  const mcp = argv[2] === 'mcp';
  const program = (mcp ? mcpCommand().name('troupe-worker mcp') : workerCommand().name('troupe-worker'))
    .version(process.env.TROUPE_WORKER_VERSION ?? 'unpacked (run from the source tree)', '-V, --version')
    .showHelpAfterError()
    .exitOverride();
  try {
    await program.parseAsync(mcp ? [argv[0]!, argv[1]!, ...argv.slice(3)] : argv);
    return 0;
  } catch (err) {
    return exitCodeOf(err, 'troupe-worker');
  }
}
