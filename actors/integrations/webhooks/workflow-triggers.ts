import type { Knex } from 'knex';
import { webhookDeployments } from '../../../storage/workflows/triggers.js';
import type { FilterValue, WebhookTrigger } from '../../workflow/trigger.js';
import { derivedRunId } from '../../workflow-run/start-pinned.js';
import type { TriggeredRun } from './route-action.js';
import type { WebhookProvider } from './providers.js';

/**
 * Which published workflows a verified delivery starts (issue 17; decision 0027). A webhook trigger names the
 * provider, the event type as the ingest computes it (`issues.opened` for GitHub: the event header and the action;
 * `Issue.create` for Linear; `job-completed` for CircleCI; `deployment.error` for Vercel) or its first segments
 * (`issues` takes every issue action), and an optional filter on the payload. Every match starts its own run, with
 * the delivery's payload as input, under an id derived from the delivery and the workflow.
 */
export const MAX_TRIGGERED_RUNS = 20;
/** More webhook workflows than this on one provider of one org are not considered (oldest first). */
const MAX_CANDIDATES = 200;

export async function workflowRunsFor(
  db: Knex, orgId: string, provider: WebhookProvider, eventType: string, body: Record<string, unknown>,
): Promise<TriggeredRun[]> {
  const deployments = await webhookDeployments(db, orgId, provider, MAX_CANDIDATES);
  const runs: TriggeredRun[] = [];
  for (const d of deployments) {
    if (d.publishedVersion === null || d.trigger.type !== 'webhook') continue;
    if (!eventMatches(d.trigger.event, eventType) || !filterMatches(d.trigger.filter, body)) continue;
    runs.push({ workflowId: d.workflowId, projectId: d.projectId, version: d.publishedVersion });
    if (runs.length === MAX_TRIGGERED_RUNS) break;
  }
  return runs;
}

/** `issues.opened` matches `issues.opened` and `issues`, never `issue` or `issues.closed`. */
export const eventMatches = (pattern: string, eventType: string): boolean =>
  pattern === eventType || eventType.startsWith(`${pattern}.`);

/**
 * Every filter entry holds: the value at its dotted path (array elements by index, or `*` for any element) equals
 * the entry's value, or one of its values. A path that leads nowhere matches nothing.
 */
export function filterMatches(filter: WebhookTrigger['filter'], body: Record<string, unknown>): boolean {
  return Object.entries(filter).every(([path, wanted]) => {
    const allowed: readonly FilterValue[] = Array.isArray(wanted) ? wanted : [wanted as FilterValue];
    return valuesAt(body, path.split('.')).some((v) => allowed.includes(v as FilterValue));
  });
}

function valuesAt(value: unknown, path: readonly string[]): unknown[] {
  if (path.length === 0) return [value];
  const [head, ...rest] = path as [string, ...string[]];
  if (Array.isArray(value)) {
    if (head === '*') return value.flatMap((item) => valuesAt(item, rest));
    return /^\d+$/.test(head) && Number(head) < value.length ? valuesAt(value[Number(head)], rest) : [];
  }
  if (typeof value !== 'object' || value === null || !Object.hasOwn(value, head)) return [];
  return valuesAt((value as Record<string, unknown>)[head], rest);
}

/** The run a delivery starts for one workflow: the same id however often the delivery is routed again. */
export const webhookRunId = (eventId: string, workflowId: string): string => derivedRunId(`webhook:${eventId}:${workflowId}`);
