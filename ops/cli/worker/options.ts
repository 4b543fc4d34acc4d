import type { AgentOptions, AgentPreset } from './agents/index.js';

/** The worker's agent: its `--agent` preset and the options of its flags. */
export interface WorkerAgent {
  readonly preset: AgentPreset;
  readonly options: AgentOptions;
}

/**
 * `troupe worker` (issue 15, decision 0023): registers with a registration token, heartbeats, takes sessions of its
 * projects as they are offered on the daemon event stream (or found by the poll, the fallback), runs the agent
 * command for each, relays its output, reports its outcome exactly once, and follows stops, mutations and
 * credential rotations. The server being gone is survived: agents keep running, reports wait in the state dir.
 */
export interface WorkerOptions {
  readonly url: string;
  readonly registrationToken: string;
  /** The `--agent` preset and the options of its flags (`resolveAgent`). */
  readonly agent: WorkerAgent;
  /** `--keep-workspaces`: hours a session's worktree is kept without a follow-up. @default 24 */
  readonly keepWorkspacesHours?: number;
  readonly capacity: number;
  readonly name: string;
  readonly stateDir: string;
  readonly workDir: string;
  readonly drainTimeoutSeconds: number;
  /** The resource pool this worker's sessions run in; `pool.deleted` naming it stops them. */
  readonly pool?: string;
  /** SIGTERM → SIGKILL of an agent's process group. @default 10000 */
  readonly killGraceMs?: number;
  /** argv of the MCP server each agent gets as its line to the team (`--mcp-command`). @default this program's `mcp` */
  readonly mcpCommand?: readonly string[];
  readonly backoffBaseMs?: number;
  readonly backoffCapMs?: number;
}
