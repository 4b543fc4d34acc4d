import { httpsUrl, record, sessionIdOfBranch, text } from './payload-fields.js';
import type { RouteAction } from './route-action.js';

/**
 * What a Vercel delivery asks for (decision 0014), from Vercel's "Webhooks API Reference". `deployment.error` is
 * the documented failure event ("Deployment Error: any failed deployment"); there is no `deployment.failed`, and
 * `deployment.canceled` is someone's decision, not a failure to report. A failed deployment of a
 * `troupe/<sessionId>` branch notes `deploy.failed` on that session. Vercel keeps the branch in the deployment's
 * metadata under its git provider's key; `deployment.url` is a bare host name (no scheme), `links.deployment` the
 * dashboard page with the build log.
 */
const BRANCH_KEYS = ['githubCommitRef', 'gitlabCommitRef', 'bitbucketCommitRef'] as const;
const HOST_NAME = /^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$/i;

export function planVercel(eventType: string, body: Record<string, unknown>): RouteAction {
  if (eventType !== 'deployment.error' || body.type !== 'deployment.error') return { kind: 'ignore', reason: `no handler for vercel ${eventType}` };
  const payload = record(body.payload);
  const deployment = record(payload.deployment);
  const meta = record(deployment.meta);
  const branch = BRANCH_KEYS.map((key) => text(meta[key], 500)).find((b) => b !== undefined);
  const sessionId = sessionIdOfBranch(branch);
  if (sessionId === undefined) return { kind: 'ignore', reason: 'vercel deployment of a branch that names no troupe session' };
  const name = text(deployment.name, 200);
  const target = text(payload.target, 50);
  const line = `Vercel deployment${name === undefined ? '' : ` of ${name}`}${target === undefined ? '' : ` (${target})`} failed`;
  const url = deploymentUrl(deployment.url);
  const inspect = httpsUrl(record(payload.links).deployment);
  const note = `${line}${url === undefined ? '' : `: ${url}`}${inspect === undefined ? '' : ` (build log: ${inspect})`}`;
  return { kind: 'recordSessionActivity', sessionId, activityKind: 'deploy.failed', body: note };
}

function deploymentUrl(url: unknown): string | undefined {
  if (typeof url === 'string' && HOST_NAME.test(url)) return `https://${url}`;
  return httpsUrl(url);
}
