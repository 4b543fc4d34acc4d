import type { Deps } from '../../deps.js';
import { findOAuthConnection } from '../../../../storage/integrations/oauth.js';
import { workspaceOfRun } from '../../../../storage/sessions/run-reports.js';
import { completedRunOf, owePullRequest, projectRepositoryOf } from '../../../../storage/sessions/pull-requests.js';
import { githubRepositoryOf } from './github-repository.js';
import { pullRequestBody, pullRequestTitle } from './pull-request-text.js';

/**
 * Decides, once a run ended `completed`, whether it owes a pull request (decision 0076), and writes the outbox row the
 * sender works from: owed when its workspace pushed at least one commit, the repository it ran on is on GitHub and
 * the org has a GitHub connection; recorded as skipped, with the reason, when it pushed commits but one of the
 * other two is missing, so the session detail can say why no pull request came. Keyed by the run: called again (a
 * retried `completed`) it writes nothing more.
 */
export async function owePullRequestForRun(deps: Pick<Deps, 'db' | 'config' | 'clock'>, orgId: string, sessionKey: string): Promise<void> {
  const { db } = deps;
  const run = await completedRunOf(db, orgId, sessionKey);
  if (run === undefined) return;
  const workspace = await workspaceOfRun(db, orgId, sessionKey, run.epoch);
  if (workspace === null || !workspace.pushed || workspace.commits.length === 0) return;
  const owed = { orgId, sessionId: sessionKey, epoch: run.epoch, head: workspace.branch, at: new Date(deps.clock.now()) };
  const skip = (reason: string, repository: string | null = null) =>
    owePullRequest(db, { ...owed, repository, base: null, title: null, body: null, skippedBecause: reason });

  const repository = run.repository ?? (await projectRepositoryOf(db, orgId, run.projectId, workspace.repository)) ?? null;
  if (repository === null) return skip('the session ran on no repository of its project');
  const github = githubRepositoryOf(repository.url);
  if (github === null) return skip('the repository is not on GitHub');
  const name = `${github.owner}/${github.repo}`;
  if (!(await findOAuthConnection(db, orgId, 'github'))) return skip('the org has no GitHub connection', name);

  const link = deps.config.publicUrl ? `${deps.config.publicUrl}/sessions/${run.publicId}` : null;
  await owePullRequest(db, {
    ...owed, repository: name, base: baseBranchOf(run.ref, repository.defaultBranch), skippedBecause: null,
    title: pullRequestTitle(run.prompt, run.publicId),
    body: pullRequestBody({
      sessionId: run.publicId, link, costUsd: run.costUsd, commits: workspace.commits,
      filesChanged: workspace.filesChanged, insertions: workspace.insertions, deletions: workspace.deletions,
    }),
  });
}

/**
 * The branch the pull request asks to merge into: the ref the session started from when it names a branch, else the
 * repository's default branch. A pull request's base cannot be a commit, so a hex ref (dispatch takes 7-40 hex
 * commits) is read as one; a tag GitHub refuses, and its reason shows in the detail.
 */
export function baseBranchOf(ref: string | null, defaultBranch: string): string {
  if (ref === null || ref === '' || /^[0-9a-f]{7,64}$/i.test(ref) || ref.startsWith('refs/tags/')) return defaultBranch;
  return ref.replace(/^refs\/heads\//, '');
}
