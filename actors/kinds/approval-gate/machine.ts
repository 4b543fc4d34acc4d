import { accept, reject } from '../../runtime/machine.js';
import { choose, defineMachine, go, type Take } from '../../runtime/define-machine.js';
import { gateStatuses, type Decider, type GateDecision, type GateFields, type GateRecord, type GateStatus } from '../../../schemas/workflows/approval-gate.js';

/**
 * One approval gate (`approval-gate/<id>`), opened by a workflow run reaching an approval node or by
 * `POST /api/approval-gates`. It is decided once: the mailbox serialises parallel decides, the first one moves
 * it out of `pending`, and every later one is a 409. Who decided, and in what role, comes from the authenticated
 * user at the edge, never from the request body.
 *
 * Statuses: absent → pending → approved | rejected | escalated (all three final). `escalated` on a gate with
 * `escalation: live-session` names the approver as driver; its run then opens a session that driver drives and
 * resumes when it ends (decision 0069). The route takes either tense of each decision; the gate holds the past.
 * `gate.open` is idempotent (a run re-opens its gate after a restart and learns a decision it missed).
 */
export {
  gateStatuses, type Decider, type GateDecision, type GateFields, type GateRecord, type GateStatus,
} from '../../../schemas/workflows/approval-gate.js';

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

export const initialGateState = (): GateState => ({ status: 'absent' });

export type GateEffect = { readonly type: 'notifyRun'; readonly runId: string; readonly gateId: string; readonly decision: GateDecision; readonly driver?: string };

type On<T extends GateMsgType, To = GateStatus, In = GateState> =
  Take<GateState, Extract<GateMsg, { type: T }>, GateEffect, GateView, GateStatus, To, In>;

const open: On<'gate.open', 'pending', { status: 'absent' }> = (_state, msg, { id, now, to }) => {
  const { type: _type, ...fields } = msg;
  const opened: LiveGate = { ...fields, status: to, createdAt: iso(now), decidedAt: null, decidedBy: null, driver: null };
  return accept(opened, viewOf(id, opened));
};

/** A run re-opens its gate after a restart: it learns the gate as it is, decided or not. */
const reopen: On<'gate.open', GateStatus, LiveGate> = (state, _msg, { id }) => accept(state, viewOf(id, state));

/** The first decision wins: it moves the gate to the status the decision names, one of those the table lists. */
const decide: On<'gate.decide', readonly GateStatus[], LiveGate> = (state, msg, { id, now }) => {
  // Only an escalate-to-live-session gate hands the run to a driver: the server-derived approver.
  const driver = msg.decision === 'escalated' && state.escalation === 'live-session' ? `user:${msg.decidedBy.userId}` : null;
  const next: LiveGate = { ...state, status: msg.decision, decidedAt: iso(now), decidedBy: msg.decidedBy, comment: msg.comment ?? null, driver };
  const effects: GateEffect[] = state.runId
    ? [{ type: 'notifyRun', runId: state.runId, gateId: id, decision: msg.decision, ...(driver ? { driver } : {}) }]
    : [];
  return accept(next, viewOf(id, next), effects);
};

export const gateMachine = defineMachine<GateState, GateMsg, GateEffect, GateView, GateStatus>({
  statuses: gateStatuses,
  messageTypes: gateMsgTypes,
  statusOf: (state) => state.status,
  // Another org's gate is indistinguishable from an absent one, whatever its status.
  screen: (state, msg) => (state.status !== 'absent' && msg.orgId !== state.orgId ? reject('NOT_FOUND', 'approval gate not found') : undefined),
  refuse: (from) => (from === 'absent'
    ? reject('NOT_FOUND', 'approval gate not found')
    : reject('CONFLICT', `approval gate is already ${from}`, { status: from })),
  table: {
    absent: { 'gate.open': go('pending', open) },
    pending: { 'gate.open': go('pending', reopen), 'gate.decide': choose(['approved', 'rejected', 'escalated'], decide) },
    approved: { 'gate.open': go('approved', reopen) },
    rejected: { 'gate.open': go('rejected', reopen) },
    escalated: { 'gate.open': go('escalated', reopen) },
  },
});

export function viewOf(id: string, g: LiveGate): GateView {
  return {
    id, orgId: g.orgId, projectId: g.projectId, title: g.title, issue: g.issue, sessionId: g.sessionId, runId: g.runId,
    nodeId: g.nodeId, escalation: g.escalation, requiredRole: g.requiredRole, status: g.status, createdAt: g.createdAt,
    decidedAt: g.decidedAt, decidedBy: g.decidedBy, comment: g.comment ?? null, driver: g.driver,
  };
}

const iso = (ms: number): string => new Date(ms).toISOString();

