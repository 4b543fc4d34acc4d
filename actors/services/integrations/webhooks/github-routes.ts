import { MAX_PROMPT_LENGTH } from '../../../../schemas/sessions/session-actor.js';
import { httpsUrl, positiveInteger, record, sessionIdOfBranch, text } from './payload-fields.js';
import type { RouteAction } from './route-action.js';
import { parseGithubIssueRef } from '../../../../storage/sessions/github-issue-ref.js';

/**
 * What a GitHub delivery asks for (decision 0014). The event type is `<X-GitHub-Event>.<action>`; both halves are
 * matched, and the action is read from the signed body as well, so a missing header cannot pass for an event.
 * Field names are GitHub's webhook payloads ("Webhook events and payloads": `issues`, `check_run`, `workflow_run`).
 *
 * - `issues.opened` dispatches a session keyed `github:<orgId>:<issue node_id>` (or `<repository id>#<number>`
 *   when GitHub sends no node id): the node id survives the issue moving to another repository, and the org in
 *   the key keeps two orgs watching one repository from sharing a session. Pull requests are their own event
 *   (`pull_request`) and are not handled; an issue-shaped body carrying `pull_request` is refused the same way.
 * - `check_run.completed` and `workflow_run.completed` whose conclusion is a failure, on a `troupe/<sessionId>`
 *   head branch, note `ci.job_failed` on that session, like a failed CircleCI job. A repository using GitHub
 *   Actions sends both for one failure (each failed job is a check run); subscribe the webhook to one of them.
 */
const FAILED_CONCLUSIONS = new Set(['failure', 'timed_out', 'startup_failure']);

export function planGithub(orgId: string, eventType: string, body: Record<string, unknown>): RouteAction {
  if (eventType === 'issues.opened' && body.action === 'opened') return planIssueOpened(orgId, body);
  if (eventType === 'check_run.completed' && body.action === 'completed') {
    const run = record(body.check_run);
    return failedRun('check run', run, record(run.check_suite).head_branch, run.name, body);
  }
  if (eventType === 'workflow_run.completed' && body.action === 'completed') {
    const run = record(body.workflow_run);
    // A run's own name can be empty (GitHub's example payload has `"name": ""`); the workflow's is the fallback.
    return failedRun('workflow', run, run.head_branch, text(run.name, 200) ?? record(body.workflow).name, body);
  }
  return { kind: 'ignore', reason: `no handler for github ${eventType}` };
}

function planIssueOpened(orgId: string, body: Record<string, unknown>): RouteAction {
  const issue = record(body.issue);
  // An agent's own token opening an issue (a follow-up, a bug it found) would otherwise dispatch an agent, which
  // could open another: work started by a bot never starts more work by itself.
  if (record(body.sender).type === 'Bot' || record(issue.user).type === 'Bot') {
    return { kind: 'ignore', reason: 'github issue opened by a bot: not dispatched, so agents cannot dispatch themselves in a loop' };
  }
  if (issue.pull_request !== undefined) return { kind: 'ignore', reason: 'github pull requests are not dispatched' };
  const repository = record(body.repository);
  const number = positiveInteger(issue.number);
  const title = text(issue.title, 1000);
  const repoName = text(repository.full_name, 150);
  if (number === undefined || title === undefined || repoName === undefined) {
    return { kind: 'ignore', reason: 'github issue without number, title or repository' };
  }
  const nodeId = text(issue.node_id, 200);
  const repositoryId = positiveInteger(repository.id);
  if (nodeId === undefined && repositoryId === undefined) return { kind: 'ignore', reason: 'github issue without node_id or repository id' };
  const trackerIssue = `${repoName}#${number}`;
  // The reference becomes the comment's API path later; a name GitHub itself would not give is not taken on trust.
  if (parseGithubIssueRef(trackerIssue) === null) return { kind: 'ignore', reason: 'github issue whose repository full_name is not a valid owner/repo' };
  const heading = `${trackerIssue}: ${title}`;
  const description = text(issue.body, MAX_PROMPT_LENGTH) ?? '';
  return {
    kind: 'dispatchSession',
    trackerSessionId: `github:${orgId}:${nodeId ?? `${repositoryId}#${number}`}`,
    trackerIssue,
    prompt: (description === '' ? heading : `${heading}\n\n${description}`).slice(0, MAX_PROMPT_LENGTH),
  };
}

function failedRun(
  what: 'check run' | 'workflow', run: Record<string, unknown>, headBranch: unknown, runName: unknown, body: Record<string, unknown>,
): RouteAction {
  const conclusion = text(run.conclusion, 50);
  if (conclusion === undefined || !FAILED_CONCLUSIONS.has(conclusion)) {
    return { kind: 'ignore', reason: `github ${what} ${conclusion ?? 'without conclusion'}: nothing to report` };
  }
  const sessionId = sessionIdOfBranch(headBranch);
  if (sessionId === undefined) return { kind: 'ignore', reason: `github ${what} on a branch that names no troupe session` };
  const name = text(runName, 200) ?? what;
  const runNumber = positiveInteger(run.run_number);
  const repoName = text(record(body.repository).full_name, 150);
  const line = `GitHub ${what} ${name}${runNumber === undefined ? '' : ` #${runNumber}`} ${conclusion}${repoName === undefined ? '' : ` in ${repoName}`}`;
  const url = httpsUrl(run.html_url);
  return { kind: 'recordSessionActivity', sessionId, activityKind: 'ci.job_failed', body: url === undefined ? line : `${line}: ${url}` };
}
