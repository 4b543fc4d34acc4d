import { createRequire } from 'node:module';
import type { Redis, RedisOptions } from 'ioredis';
import { TroupeError } from '../ops/kernel/errors.js';
import { coalesceSocketWrites } from '../ops/kernel/coalesce-socket-writes.js';
import type { Cache } from './cache.js';

/**
 * The Cache port on Redis (ioredis 6). It is tuned to fail fast rather than queue: with the offline queue off, a
 * command issued while the connection is down is rejected at once; a command that gets no answer within
 * `commandTimeoutMs` is rejected; a dropped connection retries a command at most once. Reconnection continues in
 * the background with capped backoff, so the cache comes back by itself when Redis does. Every connection-level
 * failure surfaces as `TroupeError('CACHE_UNAVAILABLE')`; a Redis reply error (a counter holding text) is our
 * misuse and surfaces as INTERNAL, the same as in MemoryCache.
 */
export interface RedisCacheOptions {
  url: string;
  /** Prepended to every key, e.g. `troupe:`; tests use a unique one per run. */
  keyPrefix?: string;
  /** @default 500 */
  commandTimeoutMs?: number;
  /** @default 1000 */
  connectTimeoutMs?: number;
  /** Shown in Redis `CLIENT LIST`, so an operator can tell nodes apart, e.g. `troupe-<nodeId>`. */
  connectionName?: string;
  /** The first connection error after each time the connection was ready (or since start): once per outage. */
  onUnreachable?: (err: Error) => void;
  /** The connection is ready again after `onUnreachable` was called. */
  onReachable?: () => void;
}

/** After a command timed out on an open connection, how long commands fail at once before Redis is tried again. */
const SILENT_BACKOFF_MS = 2_000;
/** The watchdog's ping: every half second, answered well within 400 ms by any Redis that is not hung. */
const WATCH_EVERY_MS = 500;
const WATCH_TIMEOUT_MS = 400;

/** Reconnect backoff: 100 ms, 200 ms, … capped at 2 s, forever; a cache that is down is not fatal to a node. */
const reconnectDelay = (attempt: number): number => Math.min(attempt * 100, 2_000);

/** Creates a counter with its expiry in one step, so a crash between INCR and PEXPIRE cannot leave it immortal. */
const INCREMENT_WITH_EXPIRY = `
local created = redis.call('EXISTS', KEYS[1]) == 0
local value = redis.call('INCR', KEYS[1])
if created then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return value`;

/**
 * ioredis is loaded by the first cache made on Redis, not with this module: a node on the embedded defaults never
 * needs it (decision 0057, G10). A synchronous require, because a cache is made in a constructor.
 */
let ioredis: typeof import('ioredis') | undefined;
const loadIoredis = (): typeof import('ioredis') => (ioredis ??= createRequire(import.meta.url)('ioredis') as typeof import('ioredis'));

export class RedisCache implements Cache {
  private readonly redis: Redis;
  private readonly commandTimeoutMs: number;
  private closed = false;
  /** Until then commands fail at once: Redis stopped answering (see `onSilent`). */
  private silentUntil = 0;
  private readonly watch: NodeJS.Timeout;
  private pinging = false;

  /** The connection itself, for rate-limiter-flexible's store: the same key prefix, timeouts and reconnection. */
  get client(): Redis {
    return this.redis;
  }

  constructor(opts: RedisCacheOptions) {
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 500;
    const options: RedisOptions = {
      enableOfflineQueue: false,
      commandTimeout: this.commandTimeoutMs,
      maxRetriesPerRequest: 1,
      connectTimeout: opts.connectTimeoutMs ?? 1_000,
      retryStrategy: reconnectDelay,
      ...(opts.keyPrefix ? { keyPrefix: opts.keyPrefix } : {}),
      ...(opts.connectionName ? { connectionName: opts.connectionName } : {}),
    };
    this.redis = new (loadIoredis().Redis)(opts.url, options);
    // Connection errors are reported to the caller of each command and, once per outage, to `onUnreachable` (an
    // operator must hear that Redis is gone; ioredis repeats the error on every reconnect attempt). Without a
    // listener ioredis would also emit an unhandled 'error' event and take the process down.
    let reported = false;
    this.redis.on('error', (err: Error) => {
      if (reported || this.closed) return;
      reported = true;
      opts.onUnreachable?.(err);
    });
    // A dispatch counts its two rate limits at once: their commands go out in one write (decision 0062).
    this.redis.on('connect', () => coalesceSocketWrites(this.redis.stream));
    this.redis.on('ready', () => {
      if (!reported) return;
      reported = false;
      opts.onReachable?.();
    });
    // Commands of the rate limiter go to the client directly and fall back to memory silently, each after its own
    // timeout; a ping of our own notices a hung Redis for them too, within a second (see `onSilent`).
    this.watch = setInterval(() => this.watchdog(), WATCH_EVERY_MS);
    this.watch.unref();
  }

  async get(key: string): Promise<string | undefined> {
    const value = await this.run(() => this.redis.get(key));
    return value ?? undefined;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    await this.run(() => (ttlMs === undefined ? this.redis.set(key, value) : this.redis.set(key, value, 'PX', checkTtl(ttlMs))));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const ttl = checkTtl(ttlMs);
    const reply = await this.run(() => this.redis.set(key, value, 'PX', ttl, 'NX'));
    return reply === 'OK';
  }

  async increment(key: string, ttlMs: number): Promise<number> {
    const ttl = checkTtl(ttlMs);
    const reply = await this.run(() => this.redis.eval(INCREMENT_WITH_EXPIRY, 1, key, String(ttl)));
    return Number(reply);
  }

  async delete(key: string): Promise<void> {
    await this.run(() => this.redis.del(key));
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.run(() => this.redis.ping())) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watch);
    if (this.redis.status === 'ready') {
      try {
        await this.redis.quit();
        return;
      } catch {
        // Fall through: a connection that cannot say goodbye is simply dropped.
      }
    }
    this.redis.disconnect();
  }

  private async run<T>(command: () => Promise<T>): Promise<T> {
    if (this.closed) throw new TroupeError('CACHE_UNAVAILABLE', 'cache is closed');
    if (Date.now() < this.silentUntil) throw new TroupeError('CACHE_UNAVAILABLE', 'redis stopped answering; retried shortly');
    await this.connected();
    try {
      return await command();
    } catch (err) {
      if (err instanceof Error && err.message === 'Command timed out') this.onSilent();
      throw classify(err);
    }
  }

  /**
   * A command got no answer in time on a connection that looks open: Redis hangs (frozen, swapping, a silent
   * link). Waiting out the timeout on every later command would add it to every request that touches the cache
   * (issue 20 measured ~1 s per dispatch, two timeouts), so for `SILENT_BACKOFF_MS` commands fail at once, and the
   * connection is dropped and made again: until it is ready, its users (the rate limiter's insurance included) see
   * a cache that is not ready rather than one that is slow. The next command after the backoff tries Redis again.
   */
  private watchdog(): void {
    if (this.pinging || this.closed || this.redis.status !== 'ready' || Date.now() < this.silentUntil) return;
    this.pinging = true;
    const timer = setTimeout(() => this.onSilent(), WATCH_TIMEOUT_MS);
    this.redis.ping().then(() => clearTimeout(timer), () => clearTimeout(timer)).finally(() => { this.pinging = false; });
  }

  private onSilent(): void {
    if (Date.now() < this.silentUntil) return;
    this.silentUntil = Date.now() + SILENT_BACKOFF_MS;
    this.redis.disconnect(true);
  }

  /**
   * Commands are only sent on a ready connection. While the first connection (or a reconnection attempt) is in
   * flight, wait for it up to the command timeout; give up at once when the attempt fails or when the client is
   * between attempts, so a dead Redis costs callers one failed connect at most, never a queue.
   */
  private async connected(): Promise<void> {
    const status = this.redis.status;
    if (status === 'ready') return;
    if (status !== 'connecting' && status !== 'connect' && status !== 'wait') {
      throw new TroupeError('CACHE_UNAVAILABLE', `redis connection is ${status}`);
    }
    if (status === 'wait') this.redis.connect().catch(() => undefined);
    await new Promise<void>((resolve, reject) => {
      const finish = (err?: Error) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        this.redis.off('close', onClose);
        this.redis.off('error', onError);
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => finish();
      const onClose = () => finish(new TroupeError('CACHE_UNAVAILABLE', 'redis connection closed'));
      const onError = (err: Error) => finish(new TroupeError('CACHE_UNAVAILABLE', undefined, { cause: err.message }));
      const timer = setTimeout(() => finish(new TroupeError('CACHE_UNAVAILABLE', 'redis did not connect in time')), this.commandTimeoutMs);
      this.redis.once('ready', onReady);
      this.redis.once('close', onClose);
      this.redis.once('error', onError);
    });
  }
}

function classify(err: unknown): TroupeError {
  if (err instanceof TroupeError) return err;
  if (err instanceof Error && err.name === 'ReplyError') {
    return new TroupeError('INTERNAL', `redis rejected the command: ${err.message}`);
  }
  return new TroupeError('CACHE_UNAVAILABLE', undefined, { cause: err instanceof Error ? err.message : String(err) });
}

function checkTtl(ttlMs: number): number {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new TroupeError('INTERNAL', `cache ttlMs must be a positive number, got ${String(ttlMs)}`);
  }
  return Math.ceil(ttlMs);
}
