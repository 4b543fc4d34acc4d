import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { TroupeApiError } from '../../../http/client/index.js';
import type { AgentLine, Decided } from './line-client.js';

/**
 * The MCP server `troupe mcp` runs for one agent (issue 35 §3, decision 0088), on the official SDK. Its tools:
 * - `request_approval {summary, details?}`: a person decides; answers `{decision, comment, decidedBy}`.
 * - `approval_prompt {tool_name, input}`: Claude Code's `--permission-prompt-tool`; answers its JSON text,
 *   `{"behavior":"allow","updatedInput":…}` or `{"behavior":"deny","message":…}`. Policy may allow at once.
 * - `report_progress {message}`, `post_tracker_comment {text}`.
 * A refusal by the node (the run ended, the session has no tracker issue) is a tool error with the node's reason,
 * so the agent reads why; it never ends the server.
 */

export const SERVER_NAME = 'troupe';
export const APPROVAL_PROMPT_TOOL = 'approval_prompt';

const text = (value: unknown, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }], ...(isError ? { isError: true } : {}),
});

/** The node's refusal as the agent should read it; anything else is rethrown (the SDK reports it as an error). */
function refusal(err: unknown): CallToolResult {
  if (err instanceof TroupeApiError) return text(`Troupe refused (${err.status}${err.code ? ` ${err.code}` : ''}): ${err.reason}`, true);
  if (err instanceof Error) return text(`Troupe could not be reached: ${err.message}`, true);
  throw err;
}

const decisionReply = (d: Decided) => ({
  decision: d.decision, comment: d.comment, decidedBy: d.decidedBy,
  ...(d.decision === 'ended' ? { reason: `the session's run ended (${d.sessionStatus}) before a person decided` } : {}),
});

/** Claude Code's permission answer for what a person decided. */
function permissionAnswer(d: Decided, input: Record<string, unknown>): Record<string, unknown> {
  if (d.decision === 'approved') return { behavior: 'allow', updatedInput: input };
  if (d.decision === 'ended') return { behavior: 'deny', message: `The session ended (${d.sessionStatus}) before a person decided.` };
  const by = d.decidedBy ? ` by ${d.decidedBy}` : '';
  return { behavior: 'deny', message: `Denied${by} (${d.decision})${d.comment ? `: ${d.comment}` : ''}` };
}

export function agentLineServer(line: AgentLine, version: string): McpServer {
  const server = new McpServer({ name: SERVER_NAME, version });
  server.registerTool('request_approval', {
    description: 'Ask a person on your team to approve something before you do it (a migration, a deploy, a deletion). '
      + 'Blocks until they decide; answers {decision: approved|rejected|escalated|ended, comment, decidedBy}. Do not go ahead unless approved.',
    inputSchema: { summary: z.string().min(1).max(500).describe('What you want to do, in one line'), details: z.string().max(20_000).optional() },
  }, async ({ summary, details }) => {
    try {
      return text(decisionReply(await line.requestApproval(summary, details)));
    } catch (err) {
      return refusal(err);
    }
  });
  server.registerTool(APPROVAL_PROMPT_TOOL, {
    description: 'Permission prompt for Claude Code (--permission-prompt-tool): decides whether a tool call may run.',
    inputSchema: { tool_name: z.string().min(1).max(200), input: z.record(z.string(), z.unknown()), tool_use_id: z.string().optional() },
  }, async ({ tool_name: toolName, input }) => {
    // This server's own tools only reach the team: asking a person whether the agent may ask a person is no question.
    if (toolName.startsWith(`mcp__${SERVER_NAME}__`)) return text({ behavior: 'allow', updatedInput: input });
    try {
      const decided = await line.toolPermission(toolName, input);
      return text(decided === 'allowed' ? { behavior: 'allow', updatedInput: input } : permissionAnswer(decided, input));
    } catch (err) {
      // Claude Code must get an answer it can read: when Troupe cannot decide, the tool does not run.
      const reason = refusal(err).content[0];
      return text({ behavior: 'deny', message: reason?.type === 'text' ? reason.text : 'Troupe could not decide' });
    }
  });
  server.registerTool('report_progress', {
    description: "Tell your team how the work is going: a step on the session's timeline.",
    inputSchema: { message: z.string().min(1).max(2000) },
  }, async ({ message }) => {
    try {
      await line.reportProgress(message);
      return text({ recorded: true });
    } catch (err) {
      return refusal(err);
    }
  });
  server.registerTool('post_tracker_comment', {
    description: 'Write a comment on the tracker issue (Linear or GitHub) this session came from.',
    inputSchema: { text: z.string().min(1).max(20_000) },
  }, async ({ text: body }) => {
    try {
      const owed = await line.postTrackerComment(body);
      return text({ queued: true, tracker: owed.tracker, issue: owed.issue });
    } catch (err) {
      return refusal(err);
    }
  });
  return server;
}
