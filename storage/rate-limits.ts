import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { TroupeError } from '../ops/kernel/errors.js';
import { NodeWindowLimit } from './node-window-limit.js';

/**
 * Rate limits on rate-limiter-flexible: fixed windows of `points` per `durationSeconds` per key. With Redis every
 * node of a cluster counts in the same keys (under the cache's key prefix); without it, or while Redis is down, each
 * node counts in its own memory (the library's insurance limiter), so a Redis outage loosens limits to per node but
 * never fails a request.
 */
export interface RateLimitRule {
  readonly points: number;
  readonly durationSeconds: number;
}

export interface RateLimit {
  /**
   * Counts `points` (one unless said) against `key`; throws RATE_LIMITED (429, with `retryAfterSeconds`) once the
   * window is used up.
   */
  consume(key: string, points?: number): Promise<void>;
  /** Counts one against `key` and never throws: for failures that are counted now and refused on the next call. */
  note(key: string): Promise<void>;
  /** Throws RATE_LIMITED when `key` has used up its window, without counting. */
  assertOpen(key: string): Promise<void>;
  /** What `key` has counted in its current window. */
  used(key: string): Promise<number>;
  /** Forgets `key` (a successful login clears its source's failures). */
  forget(key: string): Promise<void>;
  /** Takes back one counted against `key` in this window: it was counted for a request that was refused elsewhere. */
  giveBack(key: string): Promise<void>;
}

/**
 * How long Redis has to answer a count before the node's own memory answers it instead (the insurance limiter). A
 * hung Redis (frozen, a silent link) otherwise held every dispatch for the cache's 500 ms command timeout until its
 * watchdog noticed, again after each reconnection: dispatch p99 15 → 512 ms on a quiet machine, where issue 20 allows
 * a rise of 50 ms. A healthy local Redis answers in well under a millisecond.
 */
export const REDIS_ANSWER_BUDGET_MS = 30;

/**
 * `call`'s answer if it comes within `budgetMs`, else `fallback`'s; a later answer from `call` is dropped. The budget
 * is judged after the event loop has read its pending I/O (setImmediate after the timer), so on a late loop an answer
 * already on the socket still wins and a busy node does not fall back for nothing.
 */
export function withinBudget<T>(call: Promise<T>, fallback: () => Promise<T>, budgetMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => setImmediate(() => {
      if (settled) return;
      settled = true;
      fallback().then(resolve, reject);
    }), budgetMs);
    const finish = (answer: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      answer();
    };
    call.then((value) => finish(() => resolve(value)), (err: unknown) => finish(() => reject(err)));
  });
}

export function createRateLimit(name: string, rule: RateLimitRule, redis: Redis | undefined, message: string): RateLimit {
  const memory = new RateLimiterMemory({ keyPrefix: `rl:${name}`, points: rule.points, duration: rule.durationSeconds });
  const shared: RateLimiterAbstract | undefined = redis
    ? new RateLimiterRedis({
      storeClient: redis, keyPrefix: `rl:${name}`, points: rule.points, duration: rule.durationSeconds,
      rejectIfRedisNotReady: true, insuranceLimiter: memory,
    })
    : undefined;
  // With Redis, each call is given REDIS_ANSWER_BUDGET_MS and then answered from memory, like an outage.
  const limiter = shared === undefined ? memory : {
    consume: (key: string, points = 1) => withinBudget(shared.consume(key, points), () => memory.consume(key, points), REDIS_ANSWER_BUDGET_MS),
    get: (key: string) => withinBudget(shared.get(key), () => memory.get(key), REDIS_ANSWER_BUDGET_MS),
    delete: (key: string) => withinBudget(shared.delete(key), () => memory.delete(key), REDIS_ANSWER_BUDGET_MS),
    reward: (key: string, points: number) => withinBudget(shared.reward(key, points), () => memory.reward(key, points), REDIS_ANSWER_BUDGET_MS),
  };
  const refused = (res: RateLimiterRes) => {
    const retryAfterSeconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
    return new TroupeError('RATE_LIMITED', message, { retryAfterSeconds, limit: rule.points, windowSeconds: rule.durationSeconds });
  };
  return {
    async consume(key, points = 1) {
      try {
        await limiter.consume(key, points);
      } catch (err) {
        if (err instanceof RateLimiterRes) throw refused(err);
        throw err;
      }
    },
    async note(key) {
      await limiter.consume(key).catch((err: unknown) => {
        if (!(err instanceof RateLimiterRes)) throw err;
      });
    },
    async assertOpen(key) {
      const res = await limiter.get(key);
      if (res !== null && res.consumedPoints >= rule.points && res.msBeforeNext > 0) throw refused(res);
    },
    async used(key) {
      const res = await limiter.get(key);
      return res !== null && res.msBeforeNext > 0 ? res.consumedPoints : 0;
    },
    async forget(key) {
      await limiter.delete(key);
    },
    async giveBack(key) {
      await limiter.reward(key, 1);
    },
  };
}

/** A login source may fail this often per email per minute; then it waits, while other sources may still try. */
export const LOGIN_FAILURES_PER_SOURCE_PER_MINUTE = 10;

/** The node's rate limits (decision 0026), one set per node, Redis-backed when the node has Redis. */
export interface RateLimits {
  /** Write requests (POST, PUT, PATCH, DELETE) per user, API key or machine client. */
  readonly writes: RateLimit;
  /** Dispatches (sessions, workflow runs, prompts) per user, API key or machine client. */
  readonly dispatches: RateLimit;
  /** Failed logins per (email, source address). */
  readonly loginFailuresBySource: RateLimit;
  /** Failed logins per email, from any source: the slower global ceiling. */
  readonly loginFailuresByEmail: RateLimit;
  /** Failed logins per (email, source) while the email is past its ceiling: one an hour. */
  readonly loginFailuresPastCeiling: RateLimit;
  /** Refused webhook deliveries per source address, counted before any signature is computed. */
  readonly webhookFailures: RateLimit;
  /** Single sign-on starts (`POST /api/auth/oidc/start`, unauthenticated) per source address. */
  readonly ssoStartsBySource: RateLimit;
  /** Bytes of agent output and interview tokens per worker (a runtime token), plus WORKER_REQUEST_BYTES a request. */
  readonly workerOutputBytes: RateLimit;
  /** Verified provider deliveries per org: a signing secret is a credential that writes. */
  readonly webhookDeliveries: RateLimit;
  /** Runs started by an org's schedules and webhook triggers, together: the dispatch limit, per org. */
  readonly triggeredStarts: RateLimit;
  /** A worker's (runtime token's) requests on the worker protocol, counted per node (decision 0082). */
  readonly worker: WorkerRequestLimits;
}

/** Which of a worker's limits a request counts against: its heartbeats, its polls, or its other writes (reports). */
export type WorkerRequestKind = 'heartbeat' | 'poll' | 'report';
export type WorkerRequestLimits = Readonly<Record<WorkerRequestKind, NodeWindowLimit>>;

/** What one request of agent output costs beyond its bytes, so a flood of tiny posts is limited too. */
export const WORKER_REQUEST_BYTES = 1024;

export function createRateLimits(
  limits: {
    readonly writesPerMinute: number; readonly dispatchesPerMinute: number; readonly loginFailuresPerEmailPerHour: number;
    readonly webhookFailuresPerMinute: number; readonly workerOutputBytesPerMinute: number; readonly webhookDeliveriesPerMinute: number;
    readonly workerHeartbeatsPerMinute: number; readonly workerReportsPerMinute: number; readonly ssoStartsPerSourcePerMinute: number;
  },
  redis: Redis | undefined,
): RateLimits {
  return {
    writes: createRateLimit('writes', { points: limits.writesPerMinute, durationSeconds: 60 }, redis, 'too many write requests from this credential'),
    dispatches: createRateLimit('dispatches', { points: limits.dispatchesPerMinute, durationSeconds: 60 }, redis, 'too many dispatches from this credential'),
    loginFailuresBySource: createRateLimit('login-source', { points: LOGIN_FAILURES_PER_SOURCE_PER_MINUTE, durationSeconds: 60 }, redis,
      'too many failed logins for this email from this address; wait a minute'),
    loginFailuresByEmail: createRateLimit('login-email', { points: limits.loginFailuresPerEmailPerHour, durationSeconds: 3600 }, redis,
      'too many failed logins for this email; wait before trying again'),
    loginFailuresPastCeiling: createRateLimit('login-past-ceiling', { points: 1, durationSeconds: 3600 }, redis,
      'too many failed logins for this email; wait before trying again'),
    webhookFailures: createRateLimit('webhook-failures', { points: limits.webhookFailuresPerMinute, durationSeconds: 60 }, redis,
      'too many refused webhook deliveries from this address'),
    ssoStartsBySource: createRateLimit('sso-start-source', { points: limits.ssoStartsPerSourcePerMinute, durationSeconds: 60 }, redis,
      'too many single sign-on starts from this address; wait a minute (TROUPE_RATE_LIMIT_SSO_STARTS_PER_SOURCE_PER_MINUTE)'),
    webhookDeliveries: createRateLimit('webhook-deliveries', { points: limits.webhookDeliveriesPerMinute, durationSeconds: 60 }, redis,
      'this org received more verified webhook deliveries this minute than TROUPE_RATE_LIMIT_WEBHOOK_DELIVERIES_PER_MINUTE allows; redeliver later'),
    triggeredStarts: createRateLimit('triggered-starts', { points: limits.dispatchesPerMinute, durationSeconds: 60 }, redis,
      "the org's schedules and webhook triggers started more runs this minute than TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE allows"),
    workerOutputBytes: createRateLimit('worker-output', { points: limits.workerOutputBytesPerMinute, durationSeconds: 60 }, redis,
      'this worker sent more agent output this minute than the node accepts (TROUPE_RATE_LIMIT_WORKER_OUTPUT_BYTES_PER_MINUTE)'),
    worker: {
      heartbeat: new NodeWindowLimit(limits.workerHeartbeatsPerMinute, 60_000,
        'this worker sent more heartbeats this minute than the node accepts (TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE)'),
      poll: new NodeWindowLimit(limits.workerHeartbeatsPerMinute, 60_000,
        'this worker polled more often this minute than the node accepts (TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE)'),
      report: new NodeWindowLimit(limits.workerReportsPerMinute, 60_000,
        'this worker sent more status reports and other writes this minute than the node accepts (TROUPE_RATE_LIMIT_WORKER_REPORTS_PER_MINUTE)'),
    },
  };
}
