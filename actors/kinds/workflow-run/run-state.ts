import type { Plan, PlanNode } from '../workflow/definition.js';

/**
 * What a workflow run is, hears and does: its statuses, state, messages, effects and view. Its own file, so that the
 * run's helpers (./live-session.ts, ./ports.ts) and its machine (./machine.ts) can each speak of them without
 * importing each other.
 */

export const runStatuses = ['absent', 'running', 'waiting', 'suspended', 'completed', 'failed'] as const;
export type RunStatus = (typeof runStatuses)[number];

/** Steps a run may take in total: a cycle without a loop node must still end. */
export const MAX_RUN_STEPS = 1000;

export type StepStatus = 'running' | 'waiting' | 'suspended' | 'completed' | 'failed';
export interface Step {
  readonly nodeId: string;
  readonly kind: PlanNode['kind'];
  readonly status: StepStatus;
  readonly startedAt: string;
  readonly endedAt?: string;
  readonly sessionId?: string;
  readonly gateId?: string;
  readonly decision?: string;
  readonly driver?: string;
  readonly branch?: boolean;
  readonly iteration?: number;
  readonly wakeAt?: string;
  readonly error?: string;
}

export type Pending =
  | { readonly kind: 'agent'; readonly nodeId: string; readonly sessionId: string }
  | { readonly kind: 'gate'; readonly nodeId: string; readonly gateId: string }
  /** An escalated gate's session, driven by `driver` (the approver, `user:<id>`). */
  | { readonly kind: 'liveSession'; readonly nodeId: string; readonly sessionId: string; readonly driver: string }
  | { readonly kind: 'wait'; readonly nodeId: string; readonly token: string; readonly wakeAt: number };

/** How a run started (issue 17): by hand, by a schedule's fire, or by a provider delivery. */
export interface RunTrigger {
  readonly kind: 'manual' | 'schedule' | 'webhook';
  /** The fire a scheduled run belongs to (ISO 8601). */
  readonly fireTime?: string;
  /** The provider delivery (`provider_webhook_events.id`) a webhook run started from. */
  readonly eventId?: string;
}

export interface LiveRun {
  readonly status: Exclude<RunStatus, 'absent'>;
  readonly orgId: string;
  readonly projectId: string;
  readonly workflowId: string;
  readonly version: number;
  readonly plan: Plan;
  readonly input: Readonly<Record<string, unknown>>;
  readonly startedBy: string;
  /** Absent in runs started before triggers existed: those were manual. */
  readonly trigger?: RunTrigger;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly visits: number;
  readonly loopCounts: Readonly<Record<string, number>>;
  readonly steps: readonly Step[];
  readonly pending: Pending | null;
  readonly error: string | null;
}
export type RunState = { readonly status: 'absent' } | LiveRun;

export type RunMsg =
  | {
      readonly type: 'run.start'; readonly orgId: string; readonly projectId: string; readonly workflowId: string;
      readonly version: number; readonly plan: Plan; readonly input: Record<string, unknown>; readonly startedBy: string;
      readonly trigger?: RunTrigger;
    }
  | { readonly type: 'run.resume' }
  | { readonly type: 'run.wake'; readonly token: string }
  | {
      readonly type: 'run.agentFinished'; readonly sessionId: string; readonly status: string; readonly error?: string;
      /** A live session's report names the org and requester it was dispatched with (live-session.ts). */
      readonly orgId?: string; readonly requestedBy?: string;
    }
  | { readonly type: 'run.gateDecided'; readonly gateId: string; readonly decision: 'approved' | 'rejected' | 'escalated'; readonly driver?: string };
export type RunMsgType = RunMsg['type'];
export const runMsgTypes: readonly RunMsgType[] = ['run.start', 'run.resume', 'run.wake', 'run.agentFinished', 'run.gateDecided'];

export type RunEffect =
  | {
      readonly type: 'dispatchAgent'; readonly runId: string; readonly orgId: string; readonly projectId: string; readonly nodeId: string;
      readonly sessionId: string; readonly trackerSessionId: string; readonly prompt: string; readonly provider?: string; readonly workType?: string; readonly agentCardId?: string;
      /** The repository of the run's project the node names (id, name or URL), and the ref to start from. */
      readonly repository?: string; readonly ref?: string;
      readonly priority?: number;
      /** Who the session is dispatched for when not the run itself: a live session's driver. */
      readonly requestedBy?: string;
    }
  | {
      readonly type: 'openGate'; readonly runId: string; readonly orgId: string; readonly projectId: string; readonly nodeId: string;
      readonly gateId: string; readonly title: string; readonly requiredRole?: string; readonly escalation?: string;
    }
  | { readonly type: 'schedule'; readonly token: string; readonly delayMs: number };

export interface RunView {
  readonly runId: string;
  readonly workflowId: string;
  readonly version: number;
  readonly status: Exclude<RunStatus, 'absent'>;
  readonly steps: readonly Step[];
  readonly error: string | null;
}
