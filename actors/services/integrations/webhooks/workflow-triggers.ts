import { setImmediate as yieldToOthers } from 'node:timers/promises';
import type { Knex } from 'knex';
import { webhookDeployments } from '../../../../storage/workflows/triggers.js';
import { derivedRunId } from '../../../kinds/workflow-run/start-pinned.js';
import { DELIVERY_VISIT_BUDGET, filterMatches, VisitBudget } from './filter-budget.js';
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

export interface TriggeredRuns {
  readonly runs: TriggeredRun[];
  /** Why some workflows were not considered (the delivery's filter budget ran out), for the delivery's outcome. */
  readonly cutOff?: string;
}

/**
 * The runs a delivery starts. Filters are matched under one visit budget for the whole delivery (filter-budget.ts),
 * and the event loop is given back between workflows, so other requests go on while a large payload is matched.
 */
export async function workflowRunsFor(
  db: Knex, orgId: string, provider: WebhookProvider, eventType: string, body: Record<string, unknown>,
  budget = new VisitBudget(DELIVERY_VISIT_BUDGET),
): Promise<TriggeredRuns> {
  const deployments = await webhookDeployments(db, orgId, provider, MAX_CANDIDATES);
  const candidates = deployments.filter((d) => d.publishedVersion !== null && d.trigger.type === 'webhook' && eventMatches(d.trigger.event, eventType));
  const runs: TriggeredRun[] = [];
  for (const [index, d] of candidates.entries()) {
    if (d.trigger.type !== 'webhook') continue;
    const matched = filterMatches(d.trigger.filter, body, budget);
    if (matched === undefined) {
      const unconsidered = candidates.length - index;
      return { runs, cutOff: `the delivery's filter budget of ${DELIVERY_VISIT_BUDGET} payload visits ran out; ${unconsidered} of ${candidates.length} matching workflows were not considered` };
    }
    if (matched) runs.push({ workflowId: d.workflowId, projectId: d.projectId, version: d.publishedVersion! });
    if (runs.length === MAX_TRIGGERED_RUNS) break;
    await yieldToOthers();
  }
  return { runs };
}

/** `issues.opened` matches `issues.opened` and `issues`, never `issue` or `issues.closed`. */
export const eventMatches = (pattern: string, eventType: string): boolean =>
  pattern === eventType || eventType.startsWith(`${pattern}.`);

/** The run a delivery starts for one workflow: the same id however often the delivery is routed again. */
export const webhookRunId = (eventId: string, workflowId: string): string => derivedRunId(`webhook:${eventId}:${workflowId}`);
