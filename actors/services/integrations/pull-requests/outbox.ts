import { Counter, type Registry } from 'prom-client';
import { nextAttemptAt } from '../outbox-retries.js';
import type { Deps } from '../../deps.js';
import { PeriodicPass } from '../../periodic-pass.js';
import { registeredMetric } from '../../../../ops/kernel/registered-metric.js';
import {
  claimDuePullRequests, pullRequestFailed, pullRequestOpened, pullRequestRetryLater, type OwedPullRequest,
} from '../../../../storage/sessions/pull-requests.js';
import { ConnectionUnusable, withConnectionToken } from '../oauth/connection-token.js';
import { DEFAULT_TRACKER_API_URLS } from '../trackers/post-comment.js';
import { openPullRequest, type PullRequestAnswer } from './open-pull-request.js';

/**
 * The pull-request outbox's sender (decision 0076), `deps.services.pullRequestOutbox`, shaped like the tracker
 * outbox (decision 0028) and paced by the same settings: every `TROUPE_TRACKER_POLL_MS` it claims the pull requests
 * due (any node may; a claim holds one for CLAIM_MS), opens each through the org's GitHub connection (a 401 refreshes
 * the token once), and records the outcome: opened, with its number and URL; refused for good on a 4xx, a missing
 * connection or one that needs re-authorizing; otherwise tried again after a backoff doubling from
 * `TROUPE_TRACKER_RETRY_BASE_MS`, until the eighth attempt (outbox-retries.ts). Counted in `troupe_pull_requests_total{outcome}`.
 */
const CLAIM_MS = 60_000;
const BATCH = 20;

type Outcome = 'opened' | 'failed' | 'retry';

export class PullRequestOutbox extends PeriodicPass {
  constructor() {
    super('pull-request-outbox', (deps) => openDuePullRequests(deps, outcomesCounter(deps.metrics)), (deps) => deps.config.trackerPollMs);
  }
}

function outcomesCounter(registry: Registry): Counter<'outcome'> {
  return registeredMetric(registry, 'troupe_pull_requests_total', () => new Counter({
    name: 'troupe_pull_requests_total',
    help: 'Pull-request attempts by outcome: opened, failed (given up), retry (tried again later)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }));
}

/** One pass: claims what is due and opens it. Returns how many it handled. */
export async function openDuePullRequests(deps: Deps, counter = outcomesCounter(deps.metrics)): Promise<number> {
  const now = deps.clock.now();
  const due = await claimDuePullRequests(deps.db, new Date(now), new Date(now + CLAIM_MS), BATCH);
  for (const pr of due) {
    const outcome = await openOne(deps, pr).catch(async (err: unknown) => {
      deps.log.warn({ err, pullRequestId: pr.id }, 'a pull request could not be opened');
      return retryOrGiveUp(deps, pr, 'internal error while opening');
    });
    counter.inc({ outcome });
  }
  return due.length;
}

async function openOne(deps: Deps, pr: OwedPullRequest): Promise<Outcome> {
  const apiUrl = deps.config.githubApiUrl ?? DEFAULT_TRACKER_API_URLS.github;
  let answer: PullRequestAnswer;
  try {
    const used = await withConnectionToken(deps, pr.orgId, 'github', (token) => openPullRequest(deps.services.outbound, apiUrl, pr, token));
    if (!used.connected) return giveUp(deps, pr, 'the org has no GitHub connection');
    answer = used.value;
  } catch (err) {
    if (err instanceof ConnectionUnusable) {
      return err.reason === 'unreachable'
        ? retryOrGiveUp(deps, pr, 'GitHub token endpoint unreachable')
        : giveUp(deps, pr, `the GitHub connection is ${err.reason}`);
    }
    throw err;
  }
  switch (answer.kind) {
    case 'opened':
      await pullRequestOpened(deps.db, pr.id, answer.number, answer.url, new Date(deps.clock.now()));
      return 'opened';
    case 'refused':
      return giveUp(deps, pr, answer.reason);
    case 'unavailable':
      return retryOrGiveUp(deps, pr, answer.reason);
  }
}

async function giveUp(deps: Deps, pr: OwedPullRequest, reason: string): Promise<Outcome> {
  deps.log.warn({ pullRequestId: pr.id, repository: pr.repository, reason }, 'a pull request was not opened');
  await pullRequestFailed(deps.db, pr.id, reason, new Date(deps.clock.now()));
  return 'failed';
}

async function retryOrGiveUp(deps: Deps, pr: OwedPullRequest, reason: string): Promise<Outcome> {
  const now = deps.clock.now();
  const dueAt = nextAttemptAt(pr.attempts, deps.config.trackerRetryBaseMs, now);
  if (dueAt === undefined) return giveUp(deps, pr, `${reason} (after ${pr.attempts} attempts)`);
  await pullRequestRetryLater(deps.db, pr.id, reason, new Date(dueAt), new Date(now));
  return 'retry';
}
