import type { AgentEvent, LineParser } from './events.js';
import { blank, countAt, jsonObject, objectAt, output, stringAt, toolSummary } from './json-lines.js';
import { checkedAgentSessionId, isAgentSessionId, type AgentInvocation, type AgentOptions, type AgentPreset } from './preset.js';

/**
 * `--agent gemini`: `gemini --output-format stream-json [--resume SESSION_ID] --prompt=PROMPT`. The prompt is the
 * value of `--prompt` (`-p`) in the same argv element: yargs takes a separate value that starts with `-` for a flag
 * of its own, but everything after the first `=` of `--prompt=` is the value, newlines included.
 */
export const geminiPreset: AgentPreset = {
  name: 'gemini',
  firstRun: (prompt, options) => invocation(prompt, [], options),
  followUp: (prompt, agentSessionId, options) => invocation(prompt, ['--resume', checkedAgentSessionId(agentSessionId)], options),
  createParser: () => new GeminiParser(),
};

function invocation(prompt: string, resume: string[], options: AgentOptions): AgentInvocation {
  return {
    bin: options.bin ?? 'gemini',
    args: ['--output-format', 'stream-json', ...resume, ...options.extraArgs, `--prompt=${prompt}`],
    stdin: { kind: 'none' },
  };
}

/**
 * The stream-json events (packages/core/src/output/types.ts): `init` (session_id, model), `message` (user echo, or
 * assistant text, in `delta` chunks), `tool_use` (tool_name, parameters), `tool_result`, `error` (warning or error)
 * and a final `result` (status, error, stats). Assistant chunks are joined and given out a line at a time, so that
 * a sentence streamed in ten pieces is not shown on ten lines.
 */
class GeminiParser implements LineParser {
  private sessionId: string | undefined;
  private text = '';
  private lastError: string | undefined;

  feed(line: string): AgentEvent[] {
    if (blank(line)) return [];
    const event = jsonObject(line);
    switch (event?.type) {
      case 'init': return this.flushed(this.session(event.session_id));
      case 'message': return event.role === 'assistant' ? this.assistant(stringAt(event.content) ?? '', event.delta === true) : [];
      case 'tool_use': return this.flushed([{ kind: 'tool', name: stringAt(event.tool_name) ?? 'tool', summary: toolSummary(event.parameters) }]);
      case 'tool_result': return this.flushed([]);
      case 'error': return this.flushed(this.error(event));
      case 'result': return this.flushed(this.result(event));
      default: return this.flushed([output(line)]);
    }
  }

  end(): AgentEvent[] {
    return this.flushed([]);
  }

  private session(id: unknown): AgentEvent[] {
    if (!isAgentSessionId(id) || id === this.sessionId) return [];
    this.sessionId = id;
    return [{ kind: 'agentSession', id }];
  }

  private assistant(content: string, delta: boolean): AgentEvent[] {
    if (!delta) return this.flushed(content === '' ? [] : [output(content)]);
    this.text += content;
    const cut = this.text.lastIndexOf('\n');
    if (cut < 0) return [];
    const complete = this.text.slice(0, cut);
    this.text = this.text.slice(cut + 1);
    return complete === '' ? [] : [output(complete)];
  }

  /** Assistant text still held, given out before `events`. */
  private flushed(events: AgentEvent[]): AgentEvent[] {
    if (this.text === '') return events;
    const text = this.text;
    this.text = '';
    return [output(text), ...events];
  }

  private error(event: Record<string, unknown>): AgentEvent[] {
    const message = stringAt(event.message) ?? 'error';
    if (event.severity !== 'warning') this.lastError = message;
    return [output(message)];
  }

  private result(event: Record<string, unknown>): AgentEvent[] {
    const events: AgentEvent[] = [];
    const stats = objectAt(event.stats);
    if (stats !== undefined) events.push({ kind: 'usage', inputTokens: countAt(stats.input_tokens), outputTokens: countAt(stats.output_tokens) });
    if (event.status !== 'error') events.push({ kind: 'result', failed: false });
    else events.push({ kind: 'result', failed: true, error: stringAt(objectAt(event.error)?.message) ?? this.lastError ?? 'the agent reported an error' });
    return events;
  }
}
