import { MAX_PROMPT_LENGTH } from '../../../schemas/sessions/session-actor.js';
import type { WebhookProvider } from './providers.js';

/**
 * What a verified delivery asks Troupe to do, decided from the provider's event alone (pure, so it is table-tested
 * and carried in the actor message instead of the whole payload). Today one event starts work: a Linear issue
 * being created dispatches a session in the integration's project, keyed by (org, Linear issue id) so a second
 * delivery about the same issue reaches the same session, and two orgs' issues never share one. A failed CircleCI
 * job is attached to the session it ran for as an activity (below). Everything else is recorded as ignored, with
 * the reason.
 *
 * How a CircleCI event names a Troupe session (decision 0014): the pipeline ran on a branch `troupe/<sessionId>`
 * (optionally `troupe/<sessionId>/<anything>`), the public 16-hex id, read from `pipeline.vcs.branch` (GitHub OAuth
 * and Bitbucket Cloud projects) or `pipeline.trigger_parameters.git.branch` (GitLab, GitHub App). Agents push their
 * work on such branches, so no CircleCI configuration is needed. The session is looked up only in the org whose
 * secret signed the delivery, so a branch naming another org's session attaches nothing.
 */
export type RouteAction =
  | {
      readonly kind: 'dispatchSession';
      readonly trackerSessionId: string;
      readonly trackerIssue: string | null;
      readonly prompt: string;
    }
  | {
      /** A note on an existing session of the signing org (a failed CI job), keyed by the delivery. */
      readonly kind: 'recordSessionActivity';
      readonly sessionId: string;
      readonly activityKind: string;
      readonly body: string;
    }
  | { readonly kind: 'ignore'; readonly reason: string };

/** CircleCI job statuses that mean the job failed (https://circleci.com/docs/webhooks-reference/, job `status`). */
const FAILED_JOB_STATUSES = new Set(['failed', 'infrastructure_fail', 'timedout']);
const SESSION_BRANCH = /^troupe\/([0-9a-f]{16})(?:\/.*)?$/;

const record = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : {});

/** The session a CircleCI pipeline's branch names, if any. */
export function circleciSessionId(body: Record<string, unknown>): string | undefined {
  const pipeline = record(body.pipeline);
  const branch = text(record(pipeline.vcs).branch, 500) ?? text(record(record(pipeline.trigger_parameters).git).branch, 500);
  return branch === undefined ? undefined : SESSION_BRANCH.exec(branch)?.[1];
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
  const workflow = record(body.workflow);
  const url = text(workflow.url, 1000);
  const project = text(record(body.project).slug, 200);
  const line = `CircleCI job ${name}${number} ${status}${project === undefined ? '' : ` in ${project}`}`;
  return {
    kind: 'recordSessionActivity', sessionId, activityKind: 'ci.job_failed',
    body: url !== undefined && /^https:\/\//.test(url) ? `${line}: ${url}` : line,
  };
}

const text = (v: unknown, max: number): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.slice(0, max) : undefined);

export function planRoute(orgId: string, provider: WebhookProvider, eventType: string, body: Record<string, unknown>): RouteAction {
  if (provider === 'linear' && body.type === 'Issue' && body.action === 'create') {
    const data = (typeof body.data === 'object' && body.data !== null ? body.data : {}) as Record<string, unknown>;
    const issueId = text(data.id, 200);
    const title = text(data.title, 1000);
    if (issueId === undefined || title === undefined) return { kind: 'ignore', reason: 'Issue event without id or title' };
    const identifier = text(data.identifier, 200) ?? null;
    const description = text(data.description, MAX_PROMPT_LENGTH) ?? '';
    const heading = identifier === null ? title : `${identifier}: ${title}`;
    const prompt = (description === '' ? heading : `${heading}\n\n${description}`).slice(0, MAX_PROMPT_LENGTH);
    return { kind: 'dispatchSession', trackerSessionId: `linear:${orgId}:${issueId}`, trackerIssue: identifier, prompt };
  }
  if (provider === 'circleci') return planCircleci(eventType, body);
  return { kind: 'ignore', reason: `no handler for ${provider} ${eventType}` };
}
