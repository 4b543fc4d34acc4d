/**
 * What an agent's output means to the worker, whichever CLI wrote it (issue 34 §1). A preset's parser turns each
 * stdout line into zero or more of these; the worker relays output, adds tool steps to the timeline, and keeps the
 * last usage, cost, agent session id and result of the run.
 */
export type AgentEvent =
  /** Text for the session's output; the worker shows each on a line of its own. */
  | { readonly kind: 'output'; readonly text: string }
  /** One tool call: a timeline step and a step heartbeat. `summary` is at most 200 characters of its input. */
  | { readonly kind: 'tool'; readonly name: string; readonly summary: string }
  /** The run's token totals so far as the agent reports them (a later one replaces an earlier one, never adds). */
  | { readonly kind: 'usage'; readonly inputTokens: number; readonly outputTokens: number; readonly costUsd?: number }
  /** The agent's own conversation id: what a follow-up resumes. */
  | { readonly kind: 'agentSession'; readonly id: string }
  /** How the agent itself says the run ended; the exit code still decides when the agent never says. */
  | { readonly kind: 'result'; readonly failed: boolean; readonly error?: string }
  /** The run's cost so far from the command contract's `{"troupe":{"costUsd":N}}` line (the last one counts). */
  | { readonly kind: 'cost'; readonly costUsd: number };

/** Reads one agent's stdout, a line at a time. Never throws: a line it does not understand is output. */
export interface LineParser {
  feed(line: string): AgentEvent[];
  /** Stdout closed: whatever the parser still holds. */
  end(): AgentEvent[];
}

export const TOOL_SUMMARY_CHARS = 200;
