import { readFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Command } from 'commander';
import { CliError, resolveUrl, type ClientOptions } from '../client.js';
import { AgentLine } from '../mcp/line-client.js';
import { agentLineServer } from '../mcp/server.js';

/**
 * `troupe mcp`: the agent's line to its team, an MCP server on stdio (issue 35 §3, decision 0088). A worker starts
 * its agents with `TROUPE_MCP_COMMAND` naming this command and `TROUPE_SESSION_TOKEN`, `TROUPE_SESSION_ID` and
 * `TROUPE_URL` in their environment; the agent's MCP client runs it. It acts for that one session only.
 */
function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

export function mcpCommand(): Command {
  return new Command('mcp')
    .description("an MCP server on stdio for a session's agent: request_approval, approval_prompt, report_progress, post_tracker_comment "
      + '(env TROUPE_URL, TROUPE_SESSION_ID, TROUPE_SESSION_TOKEN, as the worker gives its agents)')
    .action(async (_opts: unknown, cmd: Command) => {
      const token = process.env.TROUPE_SESSION_TOKEN;
      const sessionId = process.env.TROUPE_SESSION_ID;
      if (!token || !sessionId) throw new CliError('troupe mcp runs inside a session: TROUPE_SESSION_TOKEN and TROUPE_SESSION_ID must be set (the worker sets them)');
      const url = resolveUrl(cmd.optsWithGlobals() as ClientOptions);
      const server = agentLineServer(new AgentLine({ url, token, sessionId }), version());
      const transport = new StdioServerTransport();
      const closed = new Promise<void>((resolve) => { transport.onclose = resolve; });
      await server.connect(transport);
      // The client closing stdin ends the server; so does the agent going away.
      process.stdin.once('end', () => void server.close());
      await closed;
    });
}
