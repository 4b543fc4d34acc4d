import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';
import { resolveRepository } from '../../storage/repositories/repositories.js';
import type { SessionRepository } from '../../schemas/sessions/session-state.js';
import { AGENT_PRESETS, MAX_REF_LENGTH, MAX_REPOSITORY_URL_LENGTH, refProblem } from '../../schemas/repositories/repository.js';

/**
 * What a dispatch says about where its agent works (issue 34, decision 0075): the project repository, the ref to start
 * from and the agent preset. The session keeps a copy of the repository as it is now.
 */
export const dispatchWorkspaceMembers = {
  repository: {
    type: 'string', minLength: 1, maxLength: MAX_REPOSITORY_URL_LENGTH,
    description: "The id, name or URL of one of the project's repositories (400 on `repository` when none matches)",
  },
  ref: {
    type: 'string', minLength: 1, maxLength: MAX_REF_LENGTH,
    description: "The branch, tag or 7-40 hex commit to start from (git ref-name rules, no leading '-'); default the repository's default branch",
  },
  agent: { enum: AGENT_PRESETS, description: "The agent preset to run; default the worker's own --agent" },
} as const;

/** The syntax checks, made before anything is read or a signed request's nonce is spent. */
export function workspaceInputProblem(body: { readonly ref?: string | undefined; readonly repository?: string | undefined }): void {
  if (body.ref === undefined) return;
  if (body.repository === undefined) throw new TroupeError('VALIDATION_FAILED', 'ref: needs a repository to be a ref of', { field: 'ref' });
  const problem = refProblem(body.ref);
  if (problem !== null) throw new TroupeError('VALIDATION_FAILED', `ref: ${problem}`, { field: 'ref' });
}

/** The project's repository the dispatch names, as the session keeps it; null when it names none. */
export async function repositoryOfDispatch(db: Knex, orgId: string, projectId: string, reference: string | undefined): Promise<SessionRepository | null> {
  if (reference === undefined) return null;
  const found = await resolveRepository(db, orgId, projectId, reference);
  if (!found) throw new TroupeError('VALIDATION_FAILED', "repository: the project has no repository with this id, name or URL", { field: 'repository' });
  return { id: found.id, url: found.url, name: found.name, defaultBranch: found.defaultBranch };
}

/** The ref the session starts from: the one asked for, else the repository's default branch. */
export const refOfDispatch = (repository: SessionRepository | null, ref: string | undefined): string | null =>
  (repository === null ? null : ref ?? repository.defaultBranch);
