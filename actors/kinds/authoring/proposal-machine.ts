import { accept, reject, type Decision, type DecideContext } from '../../runtime/machine.js';
import { defineMachine, go, type Take } from '../../runtime/define-machine.js';
import type { CandidatePlan } from './plan.js';
import type { AgentCardDraft, AuthoringTarget, ProposalDigests, ProposalRecord, ProposalVersionRecord } from '../../../schemas/authoring/proposal.js';
export { type ProposalDigests, type ProposalRecord, type ProposalVersionRecord } from '../../../schemas/authoring/proposal.js';

/**
 * The proposal actor (`proposal/<proposalId>`) owns one isolated proposal: a reviewed synthesis candidate stored
 * apart from the runtime workflow it is about. Each apply appends an immutable version (1, 2, …); nothing a
 * proposal holds ever reaches `workflows`, `workflow_versions` or a run (spec 3.3: "nothing in runtime changes").
 *
 * Statuses:
 * - absent: never stored under this id.
 * - draft:  stored; each `proposal.append` whose `expectedVersion` equals the current version appends the next.
 *
 * Transitions beyond creation are not shown by the spec; review, approval and promotion to a workflow are left for
 * the room that owns them. The digests were revalidated by the caller before the message was sent; the actor's own
 * check is the proposal version, which its mailbox serialises, so two appends racing on version n cannot both win.
 */

export interface ProposalState {
  /** Only the head: versions live in the `authoring_proposal_versions` read model, so the snapshot stays small. */
  readonly proposal: ProposalRecord | null;
}

export interface ProposalAppendMsg {
  readonly type: 'proposal.append';
  readonly orgId: string;
  readonly projectId: string;
  readonly target: AuthoringTarget;
  readonly workflowId: string;
  /** The agent card an agent-card candidate is about ('' for a new card); absent for workflows. */
  readonly agentCardId?: string;
  /** 0 to store a new proposal; otherwise the version the caller last saw. */
  readonly expectedVersion: number;
  /** A workflow candidate. */
  readonly plan?: CandidatePlan;
  /** An agent-card candidate. */
  readonly card?: AgentCardDraft;
  readonly digests: ProposalDigests;
  /** The credential label of the caller, from the authenticated principal. */
  readonly by: string;
}

export type ProposalMsg = ProposalAppendMsg;
export type ProposalMsgType = ProposalMsg['type'];
export const proposalMsgTypes = ['proposal.append'] as const satisfies readonly ProposalMsgType[];

export interface ProposalReply {
  readonly proposalId: string;
  readonly target: AuthoringTarget;
  readonly status: 'draft';
  readonly version: number;
}

export type ProposalEffect = { readonly type: 'versionAppended'; readonly proposal: ProposalRecord; readonly version: ProposalVersionRecord };

export const proposalLifecycle = ['absent', 'draft'] as const;
export type ProposalLifecycle = (typeof proposalLifecycle)[number];

export const initialProposalState = (): ProposalState => ({ proposal: null });
export const lifecycleOf = (state: ProposalState): ProposalLifecycle => (state.proposal === null ? 'absent' : state.proposal.status);

type On<To, In = ProposalState> = Take<ProposalState, ProposalMsg, ProposalEffect, ProposalReply, ProposalLifecycle, To, In>;

/** The proposal after this append, and the version it appends. */
function appended(proposal: ProposalRecord, msg: ProposalMsg, ctx: DecideContext): Decision<ProposalState, ProposalEffect, ProposalReply> {
  const version: ProposalVersionRecord = {
    proposalId: ctx.id, version: proposal.version, ...(msg.plan ? { plan: msg.plan } : {}), ...(msg.card ? { card: msg.card } : {}),
    digests: msg.digests, createdBy: msg.by, createdAt: ctx.now,
  };
  return accept({ proposal }, { proposalId: ctx.id, target: proposal.target, status: proposal.status, version: proposal.version }, [
    { type: 'versionAppended', proposal, version },
  ]);
}

/** The first apply stores the proposal as version 1; a caller naming another version refers to one that is not here. */
const create: On<'draft'> = (_state, msg, ctx) => {
  if (msg.expectedVersion !== 0) return reject('NOT_FOUND', 'proposal not found');
  return appended({
    id: ctx.id, orgId: msg.orgId, projectId: msg.projectId, target: msg.target, workflowId: msg.workflowId,
    ...(msg.target === 'agentCard' ? { agentCardId: msg.agentCardId ?? '' } : {}), status: ctx.to, version: 1, createdBy: msg.by, createdAt: ctx.now, updatedAt: ctx.now,
  }, msg, ctx);
};

/** Appends version n+1 only for a caller that saw version n, about the same target. */
const append: On<ProposalLifecycle> = (state, msg, ctx) => {
  const current = state.proposal!;
  if (msg.expectedVersion === 0) return reject('ALREADY_EXISTS', 'a proposal with this id already exists');
  if (msg.expectedVersion !== current.version) {
    return reject('CONFLICT', `stale proposalVersion: the proposal is at version ${current.version}`, { stale: 'proposalVersion', currentVersion: current.version });
  }
  if (current.target !== msg.target || current.workflowId !== msg.workflowId || (current.agentCardId ?? '') !== (msg.agentCardId ?? '')) {
    return reject('CONFLICT', 'the proposal is about another target or workflow', { stale: 'workflowId' });
  }
  return appended({ ...current, version: current.version + 1, updatedAt: ctx.now }, msg, ctx);
};

export const proposalMachine = defineMachine<ProposalState, ProposalMsg, ProposalEffect, ProposalReply, ProposalLifecycle>({
  statuses: proposalLifecycle,
  messageTypes: proposalMsgTypes,
  statusOf: lifecycleOf,
  // Another org's or project's proposal is indistinguishable from an absent one.
  screen: (state, msg) => (state.proposal !== null && (state.proposal.orgId !== msg.orgId || state.proposal.projectId !== msg.projectId)
    ? reject('NOT_FOUND', 'proposal not found')
    : undefined),
  refuse: (from, msg) => reject('ILLEGAL_TRANSITION', `a ${from} proposal does not take ${msg.type}`, { from, msgType: msg.type }),
  table: {
    absent: { 'proposal.append': go('draft', create) },
    draft: { 'proposal.append': go('draft', append) },
  },
});
