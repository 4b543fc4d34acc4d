import type { LineParser } from './events.js';
import type { PriceTable } from './prices.js';

/**
 * One agent CLI as the worker drives it (ops/decisions/0073-agent-presets.md): the argv of a first run, the argv
 * of a follow-up that resumes the agent's own conversation, and a parser for what it prints.
 */
export interface AgentPreset {
  readonly name: PresetName;
  firstRun(prompt: string, options: AgentOptions): AgentInvocation;
  followUp(prompt: string, agentSessionId: string, options: AgentOptions): AgentInvocation;
  createParser(options: AgentOptions): LineParser;
}

export const presetNames = ['command', 'claude-code', 'codex', 'gemini'] as const;
export type PresetName = (typeof presetNames)[number];

/** Spawned without a shell: `bin` is looked up on PATH unless it holds a `/`. */
export interface AgentInvocation {
  readonly bin: string;
  readonly args: readonly string[];
  readonly stdin: AgentStdin;
}

/**
 * What the agent reads on stdin. The agent CLIs read a piped stdin as more prompt (codex appends it as a `<stdin>`
 * block, claude waits for it), so theirs is empty (`/dev/null`) unless the prompt itself travels there.
 * - `prompt-lines`: the command contract: the prompt as the first line, later prompts as further lines, kept open.
 * - `text`: `text` written whole, then stdin closed (a prompt the CLI's parser would not take as a prompt in argv).
 * - `none`: `/dev/null`.
 */
export type AgentStdin =
  | { readonly kind: 'prompt-lines' }
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'none' };

export interface AgentOptions {
  /** `--agent-command` (the command preset only). */
  readonly command?: string;
  /** `--agent-bin`; else the preset's own binary name, found on PATH. */
  readonly bin?: string;
  /** `--agent-args`, split into argv; placed before the prompt so that they are read as flags. */
  readonly extraArgs: readonly string[];
  /** USD per million tokens by model (codex, which reports tokens but no cost). */
  readonly prices: PriceTable;
  /** The model codex runs (from `--agent-args`, its config, or the table's default). */
  readonly model?: string;
  /** `--agent-approvals` (claude-code): its permission prompts go to a person through the agent line (decision 0088). */
  readonly approvals?: boolean;
  /** Set per run, not by a flag: the MCP configuration of the session's agent line, when it has one. */
  readonly mcpConfig?: string;
}

/**
 * An agent's conversation id as the worker will hand it back in argv: a UUID or a similar token. One that could
 * read as a flag, or carry anything else, is never put in a command line.
 */
const agentSessionIdPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
export const isAgentSessionId = (id: unknown): id is string => typeof id === 'string' && agentSessionIdPattern.test(id);

export function checkedAgentSessionId(id: string): string {
  if (!isAgentSessionId(id)) throw new Error(`refusing to resume ${JSON.stringify(id).slice(0, 80)}: not an agent session id`);
  return id;
}
