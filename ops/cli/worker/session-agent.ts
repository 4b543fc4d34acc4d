import { rmSync } from 'node:fs';
import { Agent, freshDir } from './agent.js';
import type { OfferedSession } from './api.js';
import type { StateDir } from './state.js';

/**
 * The one place an agent process is made for a session: its directory and environment (while the claim is on the
 * wire), its start, and what each line it writes becomes.
 */

/** What `prepareAgent` made for an offer's agent before its claim was answered. */
export interface PreparedAgent {
  readonly agentDir?: string;
  readonly env?: Record<string, string>;
  readonly error?: Error;
}

/** Where what an agent writes goes. */
export interface AgentSinks {
  /** A line of output (with its newline), relayed to the server. */
  output(line: string): void;
  /** The session's cost so far, from the agent's cost line. */
  cost(costUsd: number): void;
  /** A line of stderr, only logged. */
  stderr(line: string): void;
}

export interface AgentPlace {
  readonly workDir: string;
  readonly state: StateDir;
  readonly pool?: string;
}

/** The worker's own secrets and settings are not the agent's. */
const keptFromAgent = (name: string): boolean =>
  name === 'TROUPE_REGISTRATION_TOKEN' || name === 'TROUPE_ADMIN_TOKEN' || name === 'TROUPE_TOKEN' || name.startsWith('TROUPE_WORKER_');

function agentEnv(offer: OfferedSession, place: AgentPlace): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || keptFromAgent(k)) continue;
    env[k] = v;
  }
  env.TROUPE_SESSION_ID = offer.id;
  env.TROUPE_PROJECT_ID = offer.projectId;
  env.TROUPE_SESSION_PROMPT = offer.prompt;
  if (offer.workType) env.TROUPE_WORK_TYPE = offer.workType;
  if (offer.provider) env.TROUPE_PROVIDER = offer.provider;
  if (offer.agentCardId) env.TROUPE_AGENT_CARD_ID = offer.agentCardId;
  env.TROUPE_CREDENTIALS_DIR = place.state.credentialsDir;
  const access = place.state.modelAccess();
  if (access !== undefined) env.TROUPE_MODEL_ACCESS = JSON.stringify(access);
  if (place.pool) env.TROUPE_POOL_ID = place.pool;
  return env;
}

/** A fresh directory and the environment for an offer's agent; what failed is kept to be reported once claimed. */
export function prepareAgent(offer: OfferedSession, place: AgentPlace): PreparedAgent {
  let agentDir: string | undefined;
  try {
    agentDir = freshDir(place.workDir, offer.id);
    return { agentDir, env: agentEnv(offer, place) };
  } catch (err) {
    return { agentDir, error: err as Error };
  }
}

/** The claim was refused: the directory made for it is never used. */
export function discardPrepared(prepared: PreparedAgent): void {
  if (prepared.agentDir !== undefined) rmSync(prepared.agentDir, { recursive: true, force: true });
}

/** Starts the agent command in the prepared directory; throws when it was not prepared or cannot start. */
export function startAgent(offer: OfferedSession, prepared: PreparedAgent, command: string, sinks: AgentSinks): Agent {
  if (prepared.error !== undefined || prepared.env === undefined) throw prepared.error ?? new Error('the agent was not prepared');
  return new Agent({
    sessionId: offer.id, command, workDir: prepared.agentDir ?? '', prompt: offer.prompt, env: prepared.env,
  }, {
    onOutput: (line) => sinks.output(line),
    onCost: (cost) => sinks.cost(cost),
    onStderr: (line) => sinks.stderr(line),
  });
}
