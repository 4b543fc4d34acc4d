import type { OrgRole } from '../identity/principal.js';

/**
 * An approval gate as its actor holds it (actors/kinds/approval-gate) and the `approval_gates` read model stores it
 * (storage/workflows/runs.ts). What each status means: actors/kinds/approval-gate/machine.ts.
 */
export const gateStatuses = ['absent', 'pending', 'approved', 'rejected', 'escalated'] as const;
export type GateStatus = (typeof gateStatuses)[number];
export type GateDecision = 'approved' | 'rejected' | 'escalated';

export interface GateFields {
  readonly orgId: string;
  readonly projectId: string | null;
  readonly title: string;
  readonly issue: string | null;
  readonly sessionId: string | null;
  readonly runId: string | null;
  readonly nodeId: string | null;
  readonly escalation: 'live-session' | null;
  readonly requiredRole: 'owner' | 'admin' | 'member' | null;
}

export interface Decider { readonly userId: string; readonly role: OrgRole }

/** An opened gate (every status but `absent`). */
export interface GateRecord extends GateFields {
  readonly status: Exclude<GateStatus, 'absent'>;
  readonly createdAt: string;
  readonly decidedAt: string | null;
  readonly decidedBy: Decider | null;
  /** What the decider wrote beside the decision; absent in snapshots taken before comments existed. */
  readonly comment?: string | null;
  readonly driver: string | null;
}
