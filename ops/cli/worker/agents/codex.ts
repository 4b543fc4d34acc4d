import type { AgentEvent, LineParser } from './events.js';
import { blank, countAt, jsonObject, objectAt, output, roundUsd, stringAt, toolSummary } from './json-lines.js';
import { checkedAgentSessionId, isAgentSessionId, type AgentInvocation, type AgentOptions, type AgentPreset } from './preset.js';
import { costOfTokens, type ModelPrice } from './prices.js';

/**
 * `--agent codex`: `codex exec --json --skip-git-repo-check -- PROMPT`, and for a follow-up `codex exec --json
 * --skip-git-repo-check resume THREAD_ID -- PROMPT`. The prompt follows `--`, so clap reads it as the prompt even
 * when it starts with `-` or names a subcommand (`resume`, `review`). Only `-` itself still means "read stdin", so
 * that one prompt is sent there. The worker made the directory the agent runs in, so codex's refusal to run outside
 * a git repository guards nothing here.
 */
export const codexPreset: AgentPreset = {
  name: 'codex',
  firstRun: (prompt, options) => invocation(prompt, [], options),
  followUp: (prompt, agentSessionId, options) => invocation(prompt, ['resume', checkedAgentSessionId(agentSessionId)], options),
  createParser: (options) => new CodexParser(priceOf(options)),
};

function invocation(prompt: string, resume: string[], options: AgentOptions): AgentInvocation {
  const args = ['exec', '--json', '--skip-git-repo-check', ...options.extraArgs, ...resume];
  if (prompt === '-') return { bin: options.bin ?? 'codex', args: [...args, '--', '-'], stdin: { kind: 'text', text: prompt } };
  return { bin: options.bin ?? 'codex', args: [...args, '--', prompt], stdin: { kind: 'none' } };
}

function priceOf(options: AgentOptions): ModelPrice | undefined {
  return options.prices.models.get(options.model ?? options.prices.defaultModel);
}

/**
 * The exec JSONL events (codex-rs/exec/src/exec_events.rs): `thread.started` (the id a follow-up resumes),
 * `item.completed` items (agent messages are output; commands, file changes, MCP and web calls are steps),
 * `turn.completed` (token usage, priced here) or `turn.failed`, and `error`. A turn's usage is codex's running
 * total, so the last one is the run's.
 */
class CodexParser implements LineParser {
  private threadId: string | undefined;
  private lastError: string | undefined;
  private resulted = false;

  constructor(private readonly price: ModelPrice | undefined) {}

  feed(line: string): AgentEvent[] {
    if (blank(line)) return [];
    const event = jsonObject(line);
    switch (event?.type) {
      case 'thread.started': return this.thread(event.thread_id);
      case 'turn.started': case 'item.started': case 'item.updated': case 'item.plan.delta': return [];
      case 'item.completed': return this.item(objectAt(event.item)) ?? [output(line)];
      case 'turn.completed': return this.turnCompleted(objectAt(event.usage));
      case 'turn.failed': return this.failed(stringAt(objectAt(event.error)?.message) ?? this.lastError ?? 'the turn failed');
      case 'error': return this.error(stringAt(event.message) ?? 'error');
      default: return [output(line)];
    }
  }

  end(): AgentEvent[] {
    // Codex said what went wrong and then stopped before it said the turn failed.
    return this.resulted || this.lastError === undefined ? [] : this.failed(this.lastError);
  }

  private thread(id: unknown): AgentEvent[] {
    if (!isAgentSessionId(id) || id === this.threadId) return [];
    this.threadId = id;
    return [{ kind: 'agentSession', id }];
  }

  /** Undefined for an item this parser does not know: the caller keeps its line as output. */
  private item(item: Record<string, unknown> | undefined): AgentEvent[] | undefined {
    switch (item?.type) {
      case 'agent_message': case 'plan': {
        const text = stringAt(item.text);
        return text ? [output(text)] : [];
      }
      case 'reasoning': case 'todo_list': return [];
      case 'command_execution': return [{ kind: 'tool', name: 'command', summary: toolSummary(commandLine(item)) }];
      case 'file_change': return [{ kind: 'tool', name: 'file_change', summary: toolSummary(changedFiles(item.changes)) }];
      case 'mcp_tool_call': return [{ kind: 'tool', name: `${stringAt(item.server) ?? 'mcp'}.${stringAt(item.tool) ?? 'tool'}`, summary: toolSummary(item.arguments) }];
      case 'web_search': return [{ kind: 'tool', name: 'web_search', summary: toolSummary(stringAt(item.query) ?? '') }];
      case 'collab_tool_call': return [{ kind: 'tool', name: stringAt(item.tool) ?? 'collab', summary: toolSummary(stringAt(item.prompt) ?? '') }];
      case 'error': {
        const message = stringAt(item.message);
        return message ? [output(message)] : [];
      }
      default: return undefined;
    }
  }

  private turnCompleted(usage: Record<string, unknown> | undefined): AgentEvent[] {
    const tokens = {
      inputTokens: countAt(usage?.input_tokens), cachedInputTokens: countAt(usage?.cached_input_tokens), outputTokens: countAt(usage?.output_tokens),
    };
    const costUsd = this.price && roundUsd(costOfTokens(this.price, tokens));
    this.resulted = true;
    return [
      { kind: 'usage', inputTokens: tokens.inputTokens, outputTokens: tokens.outputTokens, ...(costUsd === undefined ? {} : { costUsd }) },
      { kind: 'result', failed: false },
    ];
  }

  private error(message: string): AgentEvent[] {
    this.lastError = message;
    return [output(message)];
  }

  private failed(error: string): AgentEvent[] {
    this.resulted = true;
    return [{ kind: 'result', failed: true, error }];
  }
}

/** A command step: the command, led by how it ended when that was not a success. */
function commandLine(item: Record<string, unknown>): string {
  const command = stringAt(item.command) ?? '';
  if (item.status === 'declined') return `declined: ${command}`;
  return typeof item.exit_code === 'number' && item.exit_code !== 0 ? `exit ${item.exit_code}: ${command}` : command;
}

function changedFiles(changes: unknown): string {
  if (!Array.isArray(changes)) return '';
  return changes.map((c) => { const o = objectAt(c); return `${stringAt(o?.kind) ?? 'update'} ${stringAt(o?.path) ?? '?'}`; }).join(', ');
}
