import { ApiError, get } from '../../api.js';
import type { ProposalDetail } from '../../api-types.js';
import { yamlOfPlan } from './plan-definition.js';

/** A builder proposal's newest version, as the editor opens it: its plan as definition YAML. */
export interface OpenedProposal {
  readonly proposalId: string;
  /** The workflow it was drafted against; '' for a new workflow. */
  readonly workflowId: string;
  readonly version: number;
  readonly name: string;
  readonly yaml: string;
}

export async function openProposal(projectId: string, proposalId: string): Promise<OpenedProposal> {
  const detail = await get<ProposalDetail>(`/api/projects/${encodeURIComponent(projectId)}/authoring/proposals/${encodeURIComponent(proposalId)}`);
  const latest = detail.versions[0];
  if (!latest?.plan) throw new ApiError(0, 'That proposal holds no workflow plan (an agent-card proposal cannot open in the workflow editor).', undefined);
  return {
    proposalId: detail.proposal.id, workflowId: detail.proposal.workflowId, version: latest.version ?? detail.proposal.version,
    name: latest.plan.name, yaml: yamlOfPlan(latest.plan),
  };
}
