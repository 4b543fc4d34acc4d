import type { AgentExit } from './agent.js';
import type { RunningSession } from './running-session.js';
import type { PendingReport } from './state.js';

/** What a session's end is reported as: the statuses it still owes, its cost, and why it failed. */

/** The reports that take a session from `status` to failed along the session table (spec 3.1). */
export function failSteps(status: string): PendingReport['steps'] {
  if (status === 'claimed') return ['running', 'finalizing', 'failed'];
  if (status === 'finalizing') return ['failed'];
  return ['finalizing', 'failed'];
}

export const describeExit = (exit: AgentExit): string => (exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`);

/** A session completed only when its agent exited 0 by itself: one the worker stopped failed, whatever its code. */
const completed = (s: RunningSession, exit: AgentExit): boolean => exit.code === 0 && !s.stopOrder;

/** The report of a session whose agent exited and whose outcome is reported. */
export function outcomeReport(s: RunningSession, exit: AgentExit, workerId: string): PendingReport {
  const ok = completed(s, exit);
  const error = s.stopOrder ? s.stopOrder.reason : ok ? undefined : `the agent ended with ${describeExit(exit)}`;
  return {
    sessionId: s.id, workerId, steps: [...(s.runningAcked ? [] : ['running' as const]), 'finalizing', ok ? 'completed' : 'failed'], costUsd: s.costUsd,
    ...(error ? { error } : {}), exitCode: exit.code,
  };
}

/** The report of a session whose agent could not start: it goes from claimed to failed. */
export const startFailedReport = (sessionId: string, workerId: string, err: Error): PendingReport => ({
  sessionId, workerId, steps: failSteps('claimed'), costUsd: 0, error: `the agent could not start: ${err.message}`, exitCode: null,
});
