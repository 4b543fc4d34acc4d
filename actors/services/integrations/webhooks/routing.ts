import { MAX_PROMPT_LENGTH } from '../../../../schemas/sessions/session-actor.js';
import { planGithub } from './github-routes.js';
import { httpsUrl, record, sessionIdOfBranch, text } from './payload-fields.js';
import type { WebhookProvider } from './providers.js';
import type { RouteAction } from './route-action.js';
import { trackerIssueProblem } from '../../../../storage/sessions/github-issue-ref.js';
import { planVercel } from './vercel-routes.js';

export type { RouteAction } from './route-action.js';

/**
 * What a verified delivery asks Troupe to do, decided from the provider's event alone (pure, so it is table-tested
 * and carried in the actor message instead of the whole payload). An issue being created in a tracker dispatches a
 * session in the integration's project — a Linear issue keyed by (org, Linear issue id), a GitHub issue as in
 * github-routes.ts — so a second delivery about the same issue reaches the same session and two orgs' issues never
 * share one. A failed CI run (CircleCI below, GitHub check runs and workflow runs) or a failed Vercel deployment
 * is attached as an activity to the session whose `troupe/<sessionId>` branch it ran on. Everything else is
 * recorded as ignored, with the reason.
 *
 * How a CircleCI event names a Troupe session (decision 0014): the pipeline's branch, read from
 * `pipeline.vcs.branch` (GitHub OAuth and Bitbucket Cloud projects) or `pipeline.trigger_parameters.git.branch`
 * (GitLab, GitHub App). The session is looked up only in the org whose secret signed the delivery (ingest.ts), so
 * a branch naming another org's session attaches nothing.
 */

/** CircleCI job statuses that mean the job failed (https://circleci.com/docs/webhooks-reference/, job `status`). */
const FAILED_JOB_STATUSES = new Set(['failed', 'infrastructure_fail', 'timedout']);

/** The session a CircleCI pipeline's branch names, if any. */
export function circleciSessionId(body: Record<string, unknown>): string | undefined {
  const pipeline = record(body.pipeline);
  return sessionIdOfBranch(text(record(pipeline.vcs).branch, 500) ?? text(record(record(pipeline.trigger_parameters).git).branch, 500));
}

function planCircleci(eventType: string, body: Record<string, unknown>): RouteAction {
  if (body.type !== 'job-completed') return { kind: 'ignore', reason: `no handler for circleci ${eventType}` };
  const job = record(body.job);
  const status = text(job.status, 50);
  if (status === undefined || !FAILED_JOB_STATUSES.has(status)) return { kind: 'ignore', reason: `circleci job ${status ?? 'without status'}: nothing to report` };
  const sessionId = circleciSessionId(body);
  if (sessionId === undefined) return { kind: 'ignore', reason: 'circleci job on a branch that names no troupe session' };
  const name = text(job.name, 200) ?? 'job';
  const number = typeof job.number === 'number' && Number.isSafeInteger(job.number) ? ` #${job.number}` : '';
  const url = httpsUrl(record(body.workflow).url);
  const project = text(record(body.project).slug, 200);
  const line = `CircleCI job ${name}${number} ${status}${project === undefined ? '' : ` in ${project}`}`;
  return { kind: 'recordSessionActivity', sessionId, activityKind: 'ci.job_failed', body: url === undefined ? line : `${line}: ${url}` };
}

function planLinear(orgId: string, eventType: string, body: Record<string, unknown>): RouteAction {
  if (body.type !== 'Issue' || body.action !== 'create') return { kind: 'ignore', reason: `no handler for linear ${eventType}` };
  const data = record(body.data);
  const issueId = text(data.id, 200);
  const title = text(data.title, 1000);
  if (issueId === undefined || title === undefined) return { kind: 'ignore', reason: 'Issue event without id or title' };
  // An identifier shaped like a GitHub reference (`#`) but not a valid one is not kept as the session's trackerIssue.
  const given = text(data.identifier, 200);
  const identifier = given !== undefined && trackerIssueProblem(given) === null ? given : null;
  const description = text(data.description, MAX_PROMPT_LENGTH) ?? '';
  const heading = identifier === null ? title : `${identifier}: ${title}`;
  const prompt = (description === '' ? heading : `${heading}\n\n${description}`).slice(0, MAX_PROMPT_LENGTH);
  return { kind: 'dispatchSession', trackerSessionId: `linear:${orgId}:${issueId}`, trackerIssue: identifier, prompt };
}

export function planRoute(orgId: string, provider: WebhookProvider, eventType: string, body: Record<string, unknown>): RouteAction {
  switch (provider) {
    case 'linear': return planLinear(orgId, eventType, body);
    case 'github': return planGithub(orgId, eventType, body);
    case 'circleci': return planCircleci(eventType, body);
    case 'vercel': return planVercel(eventType, body);
  }
}
