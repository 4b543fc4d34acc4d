import type { AgentExit } from './agent.js';
import type { RunningSession } from './running-session.js';
import type { PendingReport } from './state.js';

/** What a session's end is reported as: the statuses it still owes, its cost, why it failed, and what its run left. */

/** The reports that take a session from `status` to failed along the session table (spec 3.1). */
export function failSteps(status: string): PendingReport['steps'] {
  if (status === 'claimed') return ['running', 'finalizing', 'failed'];
  if (status === 'finalizing') return ['failed'];
  return ['finalizing', 'failed'];
}

export const describeExit = (exit: AgentExit): string => (exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`);

/**
 * A session completed only when its agent exited 0 by itself and did not say it failed (an agent CLI's error result
 * exits 0 at times): one the worker stopped failed, whatever its code.
 */
const completed = (s: RunningSession, exit: AgentExit): boolean => exit.code === 0 && !s.stopOrder && s.agentResult?.failed !== true;

function errorOf(s: RunningSession, exit: AgentExit): string | undefined {
  if (s.stopOrder) return s.stopOrder.reason;
  if (exit.startError !== undefined) return `the agent could not start: ${exit.startError}`;
  if (s.agentResult?.failed) return s.agentResult.error ?? 'the agent reported an error';
  return exit.code === 0 ? undefined : `the agent ended with ${describeExit(exit)}`;
}

export interface RunFacts {
  readonly preset: string;
  readonly workspace?: PendingReport['workspace'];
}

/** The report of a session whose agent exited and whose outcome is reported. */
export function outcomeReport(s: RunningSession, exit: AgentExit, workerId: string, run: RunFacts): PendingReport {
  const ok = completed(s, exit);
  const error = errorOf(s, exit);
  return {
    sessionId: s.id, workerId, steps: [...(s.runningAcked ? [] : ['running' as const]), 'finalizing', ok ? 'completed' : 'failed'], costUsd: s.costUsd,
    ...(error ? { error } : {}), exitCode: exit.code,
    agent: { preset: run.preset, ...(s.agentSessionId ? { agentSessionId: s.agentSessionId } : {}) },
    ...(s.usage ? { usage: s.usage } : {}),
    ...(run.workspace ? { workspace: run.workspace } : {}),
  };
}

/** The report of a session whose agent could not start: it goes from claimed to failed. */
export const startFailedReport = (sessionId: string, workerId: string, err: Error): PendingReport => ({
  sessionId, workerId, steps: failSteps('claimed'), costUsd: 0, error: `the agent could not start: ${err.message}`, exitCode: null,
});
