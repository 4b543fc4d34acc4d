import { rmSync } from 'node:fs';
import { Agent, sessionDir, type AgentHooks } from './agent.js';
import type { OpenedLine } from './agent-line.js';
import { isAgentSessionId, type AgentInvocation } from './agents/index.js';
import type { OfferedSession } from './api.js';
import { isFollowUp } from './session-workspace.js';
import type { StateDir } from './state.js';
import type { WorkerAgent } from './options.js';

/**
 * The one place an agent process is made for a session: its environment and, for a session without a repository,
 * its directory (while the claim is on the wire), the preset's argv (a first run, or a follow-up that resumes the
 * agent's own conversation), and its start.
 */

/** What `prepareAgent` made for an offer's agent before its claim was answered. */
export interface PreparedAgent {
  /** The directory made for a session without a repository; one with a repository runs in its worktree. */
  readonly agentDir?: string;
  readonly env?: Record<string, string>;
  readonly error?: Error;
}

export type { WorkerAgent } from './options.js';

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
  if (offer.run !== undefined) env.TROUPE_SESSION_RUN = String(offer.run);
  env.TROUPE_CREDENTIALS_DIR = place.state.credentialsDir;
  const access = place.state.modelAccess();
  if (access !== undefined) env.TROUPE_MODEL_ACCESS = JSON.stringify(access);
  if (place.pool) env.TROUPE_POOL_ID = place.pool;
  return env;
}

/** The environment, and the directory of a session without a repository; what failed is kept to be reported once claimed. */
export function prepareAgent(offer: OfferedSession, place: AgentPlace): PreparedAgent {
  let agentDir: string | undefined;
  try {
    if (!offer.repository) agentDir = sessionDir(place.workDir, offer.id, isFollowUp(offer));
    return { ...(agentDir === undefined ? {} : { agentDir }), env: agentEnv(offer, place) };
  } catch (err) {
    return { ...(agentDir === undefined ? {} : { agentDir }), error: err as Error };
  }
}

/** The claim was refused: a first run's directory made for it is never used (a follow-up's holds earlier work). */
export function discardPrepared(offer: OfferedSession, prepared: PreparedAgent): void {
  if (prepared.agentDir !== undefined && !isFollowUp(offer)) rmSync(prepared.agentDir, { recursive: true, force: true });
}

/**
 * A follow-up resumes the agent's conversation when a run reported one; otherwise the preset starts afresh. The
 * run's agent line, when it has one, is the preset's to pass on (claude-code's `--mcp-config`).
 */
export function invocationFor(offer: OfferedSession, agent: WorkerAgent, line?: OpenedLine): AgentInvocation {
  const options = line === undefined ? agent.options : { ...agent.options, mcpConfig: line.configFile };
  const resumed = isFollowUp(offer) ? offer.followUp?.agentSessionId : undefined;
  return isAgentSessionId(resumed)
    ? agent.preset.followUp(offer.prompt, resumed, options)
    : agent.preset.firstRun(offer.prompt, options);
}

/** Starts the agent in `dir`, with its agent line if it has one; throws when it was not prepared or its argv cannot be made. */
export function startAgent(
  offer: OfferedSession, prepared: PreparedAgent, dir: string, agent: WorkerAgent, hooks: AgentHooks, line?: OpenedLine,
): Agent {
  if (prepared.error !== undefined || prepared.env === undefined) throw prepared.error ?? new Error('the agent was not prepared');
  return new Agent({
    sessionId: offer.id, invocation: invocationFor(offer, agent, line), parser: agent.preset.createParser(agent.options),
    workDir: dir, prompt: offer.prompt, env: line === undefined ? prepared.env : { ...prepared.env, ...line.env },
  }, hooks);
}
