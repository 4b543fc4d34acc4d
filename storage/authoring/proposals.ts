import type { Knex } from 'knex';
import { withStorageErrors } from '../storage-errors.js';
import type { AgentCardDraft, CandidatePlan, ProposalDigests, ProposalRecord, ProposalVersionRecord } from '../../schemas/authoring/proposal.js';

/**
 * Read models of isolated proposals. Written only by the proposal actor's projection (in its snapshot
 * transaction); read by the authoring routes. Every query is scoped by org and project.
 */

export interface ProposalView {
  readonly id: string;
  readonly projectId: string;
  readonly target: string;
  readonly workflowId: string;
  /** The agent card an agent-card proposal is about ('' for a new card or a workflow proposal). */
  readonly agentCardId: string;
  readonly status: string;
  readonly version: number;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface ProposalVersionView {
  readonly version: number;
  /** A workflow proposal's candidate. */
  readonly plan?: CandidatePlan;
  /** An agent-card proposal's candidate. */
  readonly card?: AgentCardDraft;
  readonly digests: ProposalDigests;
  readonly createdBy: string;
  readonly createdAt: string;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const iso = (v: unknown): string => (v instanceof Date ? v : new Date(String(v))).toISOString();
const jsonOf = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;

/** Moves the head and appends the version; a replayed projection of the same version changes nothing. */
export async function writeProposalVersion(trx: Knex.Transaction, proposal: ProposalRecord, version: ProposalVersionRecord): Promise<void> {
  const head = {
    org_id: proposal.orgId, project_id: proposal.projectId, target: proposal.target, workflow_id: proposal.workflowId,
    agent_card_id: proposal.agentCardId ?? '', status: proposal.status, version: proposal.version, created_by: proposal.createdBy,
    created_at: new Date(proposal.createdAt), updated_at: new Date(proposal.updatedAt),
  };
  await trx('authoring_proposals').insert({ id: proposal.id, ...head }).onConflict('id').merge(head);
  await trx('authoring_proposal_versions').insert({
    proposal_id: version.proposalId, version: version.version, org_id: proposal.orgId, plan: JSON.stringify(version.card ?? version.plan),
    candidate_digest: version.digests.candidateDigest, base_digest: version.digests.baseDigest,
    vocabulary_digest: version.digests.vocabularyDigest, policy_digest: version.digests.policyDigest,
    created_by: version.createdBy, created_at: new Date(version.createdAt),
  }).onConflict(['proposal_id', 'version']).ignore();
}

export async function findProposal(db: Knex, orgId: string, projectId: string, id: string): Promise<ProposalView | undefined> {
  if (!uuidPattern.test(id)) return undefined;
  const row = await withStorageErrors(() => db('authoring_proposals').where({ org_id: orgId, project_id: projectId, id }).first());
  return row ? toView(row) : undefined;
}

/** Newest first. The `plan` column holds the candidate: a plan, or for an agent-card proposal the card. */
export async function listProposalVersions(db: Knex, orgId: string, proposalId: string): Promise<ProposalVersionView[]> {
  const rows = await withStorageErrors(() => db('authoring_proposal_versions as v').join('authoring_proposals as p', 'p.id', 'v.proposal_id')
    .where({ 'v.org_id': orgId, 'v.proposal_id': proposalId }).orderBy('v.version', 'desc').limit(1000).select('v.*', 'p.target'));
  return rows.map((r: Record<string, unknown>) => ({
    version: Number(r.version),
    ...(r.target === 'agentCard' ? { card: jsonOf<AgentCardDraft>(r.plan) } : { plan: jsonOf<CandidatePlan>(r.plan) }),
    digests: {
      candidateDigest: String(r.candidate_digest), baseDigest: String(r.base_digest),
      vocabularyDigest: String(r.vocabulary_digest), policyDigest: String(r.policy_digest),
    },
    createdBy: String(r.created_by),
    createdAt: iso(r.created_at),
  }));
}

/** Newest first. */
export async function listProposals(db: Knex, orgId: string, projectId: string, page: { limit: number; offset: number }): Promise<ProposalView[]> {
  const rows = await withStorageErrors(() => db('authoring_proposals').where({ org_id: orgId, project_id: projectId })
    .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'asc' }]).limit(page.limit).offset(page.offset));
  return rows.map(toView);
}

function toView(r: Record<string, unknown>): ProposalView {
  return {
    id: String(r.id), projectId: String(r.project_id), target: String(r.target), workflowId: String(r.workflow_id),
    agentCardId: String(r.agent_card_id ?? ''), status: String(r.status), version: Number(r.version), createdBy: String(r.created_by), createdAt: iso(r.created_at), updatedAt: iso(r.updated_at),
  };
}
