import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiError, type WorkerApi } from './api.js';
import type { WorkerIdentity } from './identity.js';
import type { WorkerLog } from './log.js';

/**
 * The agent's line to its team (issue 35 §3, decision 0088), as the worker hands it to an agent it starts: a token
 * that acts for this run of this session only (asked of the server once the claim is answered), and the command of
 * an MCP server on stdio (`troupe mcp`) that uses it. Every agent gets them in its environment:
 * - `TROUPE_MCP_COMMAND`: the command line, shell-quoted (`'/usr/bin/node' '/…/bin.js' 'mcp'`);
 * - `TROUPE_URL`, `TROUPE_SESSION_ID`, `TROUPE_SESSION_TOKEN`: what that command reads;
 * - `TROUPE_MCP_CONFIG`: an MCP client configuration naming the server `troupe` (Claude Code's `--mcp-config` form),
 *   in a directory of its own outside the workspace (mode 0700, the file 0600: it holds the token, and must never be
 *   committed with the agent's work). The directory goes when the run ends.
 */

export const MCP_SERVER_NAME = 'troupe';

export interface AgentLinePlace {
  readonly url: string;
  /** argv of the MCP server: `--mcp-command`, else this program's own `mcp` subcommand. */
  readonly mcpCommand: readonly string[];
}

export interface OpenedLine {
  readonly env: Readonly<Record<string, string>>;
  readonly configFile: string;
  close(): void;
}

/** This very program run again with `mcp`: `troupe mcp` under `troupe worker`, `troupe-worker mcp` for the package. */
export function ownMcpCommand(): string[] {
  return [process.execPath, ...process.execArgv, process.argv[1] ?? 'troupe', 'mcp'];
}

const shellQuote = (arg: string): string => `'${arg.replaceAll("'", "'\\''")}'`;
export const commandLine = (argv: readonly string[]): string => argv.map(shellQuote).join(' ');

/**
 * Opens the line for a claimed session, or answers undefined when the server gives no token (the worker no longer
 * holds the session, or the server predates the agent line): the agent then runs without it, and says so in the log.
 */
export async function openAgentLine(
  sessionId: string, place: AgentLinePlace, deps: { api: WorkerApi; identity: WorkerIdentity; log: WorkerLog },
): Promise<OpenedLine | undefined> {
  let token: string;
  try {
    ({ token } = await deps.api.agentToken(deps.identity.token, sessionId, { workerId: deps.identity.workerId }));
  } catch (err) {
    const why = err instanceof ApiError ? `${err.status} ${err.code ?? ''}`.trim() : (err as Error).message;
    deps.log('warn', 'agent_line.unavailable', `no agent line for this session (${why}): the agent runs without troupe mcp`, { sessionId });
    return undefined;
  }
  const [command, ...args] = place.mcpCommand;
  const serverEnv = { TROUPE_URL: place.url, TROUPE_SESSION_ID: sessionId, TROUPE_SESSION_TOKEN: token };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-line-'));
  const configFile = path.join(dir, 'mcp.json');
  try {
    writeFileSync(configFile, `${JSON.stringify({ mcpServers: { [MCP_SERVER_NAME]: { type: 'stdio', command, args, env: serverEnv } } }, null, 2)}\n`, { mode: 0o600 });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    env: { ...serverEnv, TROUPE_MCP_COMMAND: commandLine(place.mcpCommand), TROUPE_MCP_CONFIG: configFile },
    configFile,
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}
