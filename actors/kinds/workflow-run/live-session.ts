import type { PlanNode } from '../workflow/definition.js';
import type { LiveRun, Pending, RunMsg } from './run-state.js';

/**
 * The escalate-to-live-session gate (decision 0069): what the approver's session is asked, and which reports of its
 * end the run believes. Pure, like the run machine that uses it.
 */

type ApprovalNode = Extract<PlanNode, { kind: 'approval' }>;

/** Whether an escalate decision on this gate opens a session driven by the approver (`escalation` is the older spelling). */
export const opensLiveSession = (node: ApprovalNode): boolean => (node.onEscalate ?? node.escalation) === 'live-session';

/** Run input shown to the live session, in characters of JSON; the rest is cut, so the prompt stays under the session's limit. */
const MAX_INPUT_CHARS = 32_000;

/** The run's context for the approver's session: what the gate asks, where it stands, and the run's input. */
export function liveSessionPrompt(
  node: ApprovalNode,
  run: { readonly runId: string; readonly workflowName: string; readonly input: Readonly<Record<string, unknown>>; readonly driver: string },
): string {
  const input = JSON.stringify(run.input);
  const shown = input.length > MAX_INPUT_CHARS ? `${input.slice(0, MAX_INPUT_CHARS)}… (cut at ${MAX_INPUT_CHARS} characters)` : input;
  return [
    node.prompt ?? node.title,
    '',
    `Escalated from approval '${node.id}' ("${node.title}") of workflow '${run.workflowName}', run ${run.runId}; ${run.driver} drives this session.`,
    'The run resumes when this session ends: completed lets it go on, failed or stopped fails it.',
    `Run input (JSON): ${shown}`,
  ].join('\n');
}

/**
 * Whether a report of the live session's end is about the session this run dispatched: its id alone is derived from
 * ids anyone in the org can read, so the report must also carry the run's org and the driver it was dispatched for.
 */
export function isReportOf(
  run: LiveRun, pending: Extract<Pending, { kind: 'liveSession' }>, msg: Extract<RunMsg, { type: 'run.agentFinished' }>,
): boolean {
  return msg.orgId === run.orgId && msg.requestedBy === pending.driver;
}
