import { accept, allows, reject, type Decision, type DecideContext, type Machine, type TransitionTable } from '../runtime/machine.js';
import type { CandidatePlan } from './plan.js';
import type { ProposalDigests, ProposalRecord, ProposalVersionRecord } from '../../schemas/authoring/proposal.js';
export { type ProposalDigests, type ProposalRecord, type ProposalVersionRecord } from '../../schemas/authoring/proposal.js';

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
  readonly target: 'workflow';
  readonly workflowId: string;
  /** 0 to store a new proposal; otherwise the version the caller last saw. */
  readonly expectedVersion: number;
  readonly plan: CandidatePlan;
  readonly digests: ProposalDigests;
  /** The credential label of the caller, from the authenticated principal. */
  readonly by: string;
}

export type ProposalMsg = ProposalAppendMsg;
export type ProposalMsgType = ProposalMsg['type'];
export const proposalMsgTypes = ['proposal.append'] as const satisfies readonly ProposalMsgType[];

export interface ProposalReply {
  readonly proposalId: string;
  readonly target: 'workflow';
  readonly status: 'draft';
  readonly version: number;
}

export type ProposalEffect = { readonly type: 'versionAppended'; readonly proposal: ProposalRecord; readonly version: ProposalVersionRecord };

export const proposalLifecycle = ['absent', 'draft'] as const;
export type ProposalLifecycle = (typeof proposalLifecycle)[number];

export const transitions: TransitionTable<ProposalLifecycle, ProposalMsgType> = {
  absent: { 'proposal.append': ['draft'] },
  draft: { 'proposal.append': ['draft'] },
};

export const initialProposalState = (): ProposalState => ({ proposal: null });
export const lifecycleOf = (state: ProposalState): ProposalLifecycle => (state.proposal === null ? 'absent' : state.proposal.status);

export function decideProposal(state: ProposalState, msg: ProposalMsg, ctx: DecideContext): Decision<ProposalState, ProposalEffect, ProposalReply> {
  const from = lifecycleOf(state);
  if (!allows(transitions, from, msg.type)) return reject('ILLEGAL_TRANSITION', `a ${from} proposal does not take ${msg.type}`, { from, msgType: msg.type });
  const current = state.proposal;
  // Another org's or project's proposal is indistinguishable from an absent one.
  if (current !== null && (current.orgId !== msg.orgId || current.projectId !== msg.projectId)) return reject('NOT_FOUND', 'proposal not found');
  if (current === null && msg.expectedVersion !== 0) return reject('NOT_FOUND', 'proposal not found');
  if (current !== null && msg.expectedVersion === 0) return reject('ALREADY_EXISTS', 'a proposal with this id already exists');
  if (current !== null && msg.expectedVersion !== current.version) {
    return reject('CONFLICT', `stale proposalVersion: the proposal is at version ${current.version}`, { stale: 'proposalVersion', currentVersion: current.version });
  }
  if (current !== null && (current.target !== msg.target || current.workflowId !== msg.workflowId)) {
    return reject('CONFLICT', 'the proposal is about another target or workflow', { stale: 'workflowId' });
  }
  const version = (current?.version ?? 0) + 1;
  const proposal: ProposalRecord = current === null
    ? {
        id: ctx.id, orgId: msg.orgId, projectId: msg.projectId, target: msg.target, workflowId: msg.workflowId,
        status: 'draft', version, createdBy: msg.by, createdAt: ctx.now, updatedAt: ctx.now,
      }
    : { ...current, version, updatedAt: ctx.now };
  const appended: ProposalVersionRecord = { proposalId: ctx.id, version, plan: msg.plan, digests: msg.digests, createdBy: msg.by, createdAt: ctx.now };
  return accept({ proposal }, { proposalId: ctx.id, target: proposal.target, status: 'draft', version }, [{ type: 'versionAppended', proposal, version: appended }]);
}

export const proposalMachine: Machine<ProposalState, ProposalMsg, ProposalEffect, ProposalReply, ProposalLifecycle> = {
  statuses: proposalLifecycle, messageTypes: proposalMsgTypes, transitions: transitions, statusOf: lifecycleOf, decide: decideProposal,
};
