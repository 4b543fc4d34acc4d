import type { AgentEvent, LineParser } from './events.js';
import { blank, costAt, countAt, jsonObject, objectAt, output, stringAt, toolSummary } from './json-lines.js';
import { checkedAgentSessionId, isAgentSessionId, type AgentInvocation, type AgentOptions, type AgentPreset } from './preset.js';

/**
 * `--agent claude-code`: Claude Code in print mode, `claude -p --output-format stream-json --verbose [--resume ID]
 * -- PROMPT` (stream-json needs --verbose in print mode). `-p` is a switch and the prompt is the positional operand,
 * so it goes after `--`: a prompt that starts with `-` cannot be read as a flag, and one after a variadic flag of
 * `--agent-args` (`--allowedTools A B`) is not taken as one of its values. Commander still dispatches a first operand
 * that names a subcommand (`update`, `mcp`, `help`…), even after `--`, so a one-word prompt travels on stdin, which
 * print mode reads when no prompt is given.
 */
export const claudeCodePreset: AgentPreset = {
  name: 'claude-code',
  firstRun: (prompt, options) => invocation(prompt, [], options),
  followUp: (prompt, agentSessionId, options) => invocation(prompt, ['--resume', checkedAgentSessionId(agentSessionId)], options),
  createParser: () => new ClaudeCodeParser(),
};

const oneWord = /^[\w-]*$/;

/** The permission-prompt tool of the agent line's MCP server (`troupe mcp`, server `troupe`), as Claude Code names it. */
export const PERMISSION_PROMPT_TOOL = 'mcp__troupe__approval_prompt';

/** The session's agent line (decision 0088): its MCP server, and with `--agent-approvals` its permission prompts. */
function agentLineArgs(options: AgentOptions): string[] {
  if (options.mcpConfig === undefined) return [];
  return ['--mcp-config', options.mcpConfig, ...(options.approvals ? ['--permission-prompt-tool', PERMISSION_PROMPT_TOOL] : [])];
}

function invocation(prompt: string, resume: string[], options: AgentOptions): AgentInvocation {
  const args = ['-p', '--output-format', 'stream-json', '--verbose', ...resume, ...agentLineArgs(options), ...options.extraArgs];
  if (oneWord.test(prompt)) return { bin: options.bin ?? 'claude', args, stdin: { kind: 'text', text: prompt } };
  return { bin: options.bin ?? 'claude', args: [...args, '--', prompt], stdin: { kind: 'none' } };
}

/**
 * The stream-json lines: `system`/`init` (session_id), `assistant` messages whose content blocks are `text` (output)
 * and `tool_use` (a step), `user` messages carrying tool results (nothing the session shows), and one final `result`
 * with the run's cost, usage, session id and whether it failed.
 */
class ClaudeCodeParser implements LineParser {
  private sessionId: string | undefined;

  feed(line: string): AgentEvent[] {
    if (blank(line)) return [];
    const message = jsonObject(line);
    switch (message?.type) {
      case 'system': return message.subtype === 'init' ? this.session(message.session_id) : [];
      case 'assistant': return this.assistant(objectAt(message.message)?.content);
      case 'user': case 'stream_event': return [];
      case 'result': return this.result(message);
      default: return [output(line)];
    }
  }

  end(): AgentEvent[] {
    return [];
  }

  private session(id: unknown): AgentEvent[] {
    if (!isAgentSessionId(id) || id === this.sessionId) return [];
    this.sessionId = id;
    return [{ kind: 'agentSession', id }];
  }

  private assistant(content: unknown): AgentEvent[] {
    if (typeof content === 'string') return content === '' ? [] : [output(content)];
    if (!Array.isArray(content)) return [];
    const events: AgentEvent[] = [];
    for (const block of content) {
      const b = objectAt(block);
      if (b?.type === 'text' && typeof b.text === 'string' && b.text !== '') events.push(output(b.text));
      else if (b?.type === 'tool_use') events.push({ kind: 'tool', name: stringAt(b.name) ?? 'tool', summary: toolSummary(b.input) });
    }
    return events;
  }

  private result(r: Record<string, unknown>): AgentEvent[] {
    const events = this.session(r.session_id);
    const usage = objectAt(r.usage);
    const costUsd = costAt(r.total_cost_usd);
    if (usage !== undefined || costUsd !== undefined) {
      // Claude counts cache writes and reads apart from `input_tokens`; all of them were input to the model.
      const inputTokens = countAt(usage?.input_tokens) + countAt(usage?.cache_creation_input_tokens) + countAt(usage?.cache_read_input_tokens);
      events.push({ kind: 'usage', inputTokens, outputTokens: countAt(usage?.output_tokens), ...(costUsd === undefined ? {} : { costUsd }) });
    }
    const subtype = stringAt(r.subtype);
    const failed = r.is_error === true || (subtype !== undefined && subtype !== 'success');
    events.push(failed ? { kind: 'result', failed, error: errorOf(r, subtype) } : { kind: 'result', failed });
    return events;
  }
}

/** The result's own words for a failure: its `errors`, else its `result` text, else its subtype. */
function errorOf(r: Record<string, unknown>, subtype: string | undefined): string {
  const listed = Array.isArray(r.errors)
    ? r.errors.map((e) => stringAt(e) ?? stringAt(objectAt(e)?.message)).filter((e): e is string => e !== undefined && e !== '')
    : [];
  const text = listed.length > 0 ? listed.join('; ') : stringAt(r.result) || (subtype !== 'success' ? subtype : undefined) || 'the agent reported an error';
  return text.length <= 1000 ? text : `${text.slice(0, 999)}…`;
}
