import type { AgentEvent, LineParser } from './events.js';
import type { AgentInvocation, AgentOptions, AgentPreset } from './preset.js';

/**
 * `--agent command` (the default): today's agent contract unchanged (README, "The agent contract"). The operator's
 * command runs through `/bin/sh -c`; the prompt is never part of that string, it is the first line of stdin (and in
 * `TROUPE_SESSION_PROMPT`). A follow-up is a fresh run of the same command: a plain command has no conversation to
 * resume. Stdout lines are output, except the cost line.
 */
export const commandPreset: AgentPreset = {
  name: 'command',
  firstRun: (_prompt, options) => shellRun(options),
  followUp: (_prompt, _agentSessionId, options) => shellRun(options),
  createParser: () => new CommandParser(),
};

function shellRun(options: AgentOptions): AgentInvocation {
  if (options.command === undefined || options.command.trim() === '') throw new Error('the command preset needs --agent-command');
  // The shell leads the agent's process group; a SIGHUP (credential rotation) meant for the agent would end it,
  // and its exit would end the session. The trap keeps it alive; its children still get the default.
  return { bin: '/bin/sh', args: ['-c', `trap : HUP\n${options.command}`], stdin: { kind: 'prompt-lines' } };
}

class CommandParser implements LineParser {
  feed(line: string): AgentEvent[] {
    const costUsd = costOf(line);
    return [costUsd === undefined ? { kind: 'output', text: line } : { kind: 'cost', costUsd }];
  }

  end(): AgentEvent[] {
    return [];
  }
}

/** The cost line, exactly a JSON object with one member `troupe` holding one member `costUsd`, a number ≥ 0. */
export function costOf(line: string): number | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith('{') || !trimmed.includes('"troupe"')) return undefined;
  try {
    const v = JSON.parse(trimmed) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v) || Object.keys(v).length !== 1) return undefined;
    const inner = (v as { troupe?: unknown }).troupe;
    if (typeof inner !== 'object' || inner === null || Array.isArray(inner) || Object.keys(inner).length !== 1) return undefined;
    const cost = (inner as { costUsd?: unknown }).costUsd;
    return typeof cost === 'number' && Number.isFinite(cost) && cost >= 0 ? cost : undefined;
  } catch {
    return undefined;
  }
}
