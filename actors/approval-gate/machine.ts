import { accept, allows, reject, type DecideContext, type Decision, type Machine, type TransitionTable } from '../runtime/machine.js';
import { gateStatuses, type Decider, type GateDecision, type GateFields, type GateRecord, type GateStatus } from '../../schemas/workflows/approval-gate.js';

/**
 * One approval gate (`approval-gate/<id>`), opened by a workflow run reaching an approval node or by
 * `POST /api/approval-gates`. It is decided once: the mailbox serialises parallel decides, the first one moves
 * it out of `pending`, and every later one is a 409. Who decided, and in what role, comes from the authenticated
 * user at the edge, never from the request body.
 *
 * Statuses: absent → pending → approved | rejected | escalated (all three final). `escalated` on a gate with
 * `escalation: live-session` resumes its run with the approver as the live session's driver.
 * `gate.open` is idempotent (a run re-opens its gate after a restart and learns a decision it missed).
 */
export {
  gateStatuses, type Decider, type GateDecision, type GateFields, type GateRecord, type GateStatus,
} from '../../schemas/workflows/approval-gate.js';

export type GateState = { readonly status: 'absent' } | GateRecord;
export type LiveGate = Extract<GateState, { orgId: string }>;

export type GateMsg =
  | ({ readonly type: 'gate.open' } & GateFields)
  | { readonly type: 'gate.decide'; readonly orgId: string; readonly decision: GateDecision; readonly decidedBy: Decider; readonly comment?: string };
export type GateMsgType = GateMsg['type'];
export const gateMsgTypes: readonly GateMsgType[] = ['gate.open', 'gate.decide'];

export interface GateView extends GateFields {
  readonly id: string;
  readonly status: Exclude<GateStatus, 'absent'>;
  readonly createdAt: string;
  readonly decidedAt: string | null;
  readonly decidedBy: Decider | null;
  readonly comment: string | null;
  readonly driver: string | null;
}

export type GateEffect = { readonly type: 'notifyRun'; readonly runId: string; readonly gateId: string; readonly decision: GateDecision; readonly driver?: string };

const decided: readonly GateStatus[] = ['approved', 'rejected', 'escalated'];
export const transitions: TransitionTable<GateStatus, GateMsgType> = {
  absent: { 'gate.open': ['pending'] },
  pending: { 'gate.open': ['pending'], 'gate.decide': decided },
  approved: { 'gate.open': ['approved'] },
  rejected: { 'gate.open': ['rejected'] },
  escalated: { 'gate.open': ['escalated'] },
};

export const initialGateState = (): GateState => ({ status: 'absent' });

export function decideGate(state: GateState, msg: GateMsg, ctx: DecideContext): Decision<GateState, GateEffect, GateView> {
  if (state.status !== 'absent' && msg.orgId !== state.orgId) return reject('NOT_FOUND', 'approval gate not found');
  if (!allows(transitions, state.status, msg.type)) {
    return state.status === 'absent'
      ? reject('NOT_FOUND', 'approval gate not found')
      : reject('CONFLICT', `approval gate is already ${state.status}`, { status: state.status });
  }
  if (msg.type === 'gate.open') {
    if (state.status !== 'absent') return accept(state, viewOf(ctx.id, state));
    const { type: _type, ...fields } = msg;
    const opened: LiveGate = { ...fields, status: 'pending', createdAt: iso(ctx.now), decidedAt: null, decidedBy: null, driver: null };
    return accept(opened, viewOf(ctx.id, opened));
  }
  if (state.status === 'absent') return reject('NOT_FOUND', 'approval gate not found');
  // Only an escalate-to-live-session gate hands the run to a driver: the server-derived approver.
  const driver = msg.decision === 'escalated' && state.escalation === 'live-session' ? `user:${msg.decidedBy.userId}` : null;
  const next: LiveGate = { ...state, status: msg.decision, decidedAt: iso(ctx.now), decidedBy: msg.decidedBy, comment: msg.comment ?? null, driver };
  const effects: GateEffect[] = state.runId
    ? [{ type: 'notifyRun', runId: state.runId, gateId: ctx.id, decision: msg.decision, ...(driver ? { driver } : {}) }]
    : [];
  return accept(next, viewOf(ctx.id, next), effects);
}

export function viewOf(id: string, g: LiveGate): GateView {
  return {
    id, orgId: g.orgId, projectId: g.projectId, title: g.title, issue: g.issue, sessionId: g.sessionId, runId: g.runId,
    nodeId: g.nodeId, escalation: g.escalation, requiredRole: g.requiredRole, status: g.status, createdAt: g.createdAt,
    decidedAt: g.decidedAt, decidedBy: g.decidedBy, comment: g.comment ?? null, driver: g.driver,
  };
}

const iso = (ms: number): string => new Date(ms).toISOString();

export const gateMachine: Machine<GateState, GateMsg, GateEffect, GateView, GateStatus> = {
  statuses: gateStatuses, messageTypes: gateMsgTypes, transitions: transitions, statusOf: (state) => state.status, decide: decideGate,
};
