import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { loadConfig } from '../../ops/config.js';
import type { Config } from '../../ops/kernel/config.js';
import { silentLogger } from '../../ops/kernel/logger.js';
import { generateAdminToken, generateMasterKey } from '../../ops/secrets.js';
import { startNode, type TroupeNode } from '../../ops/node.js';
import { deleteTopology } from '../../transport/amqp/index.js';
import { AmqpTransport } from '../../transport/amqp/index.js';
import { engines, skipEngine } from './engines.js';
import { newMigratedPglite } from './db.js';
import { injector } from './inject.js';
import { allRoutes } from '../../http/routes.js';
import { edgeHooksFor } from '../../http/edge-hooks.js';
import { deleteKeysWithPrefix } from './cache.js';

/**
 * A whole Troupe node in this process, listening on a free loopback port, for end-to-end tests through the real
 * HTTP interface. `engines: 'embedded'` is PGlite in memory, the local transport and the memory cache;
 * `engines: 'real'` is the machine's Postgres (a schema of its own), Redis (a key prefix of its own) and
 * RabbitMQ (exchange and queue names of their own). Everything it creates, `close()` removes.
 */
export interface TestNode {
  readonly node: TroupeNode;
  readonly url: string;
  readonly adminToken: string;
  readonly config: Config;
  call(method: string, path: string, init?: CallInit): Promise<CallResult>;
  /**
   * The same request without a socket: through the node's route table and its edge pipeline in this process
   * (test/support/inject.ts). For every route test that needs no stream or connection behaviour.
   */
  inject(method: string, path: string, init?: CallInit): Promise<CallResult>;
  close(): Promise<void>;
}

export interface CallInit {
  body?: unknown;
  /** Sent as-is (no JSON encoding) when given. */
  rawBody?: string | Uint8Array;
  token?: string;
  headers?: Record<string, string>;
}

export interface CallResult {
  readonly status: number;
  readonly headers: Headers;
  readonly json: any;
  readonly text: string;
}

export type EngineSet = 'embedded' | 'real';

/**
 * The engine sets every integration suite runs on: `for (const { set, skip } of engineSets) describe(..., function ()
 * { if (skip) return; ... startTestNode({ engines: set }) })`. The real set is skipped where a developer has set
 * TEST_SKIP_<ENGINE> for one of its engines, so the embedded half still runs.
 */
export const engineSets: ReadonlyArray<{ set: EngineSet; skip: boolean }> = [
  { set: 'embedded', skip: false },
  { set: 'real', skip: skipEngine.postgres || skipEngine.amqp || skipEngine.redis },
];

export async function startTestNode(opts: { engines?: EngineSet; config?: Partial<Config> } = {}): Promise<TestNode> {
  const set = opts.engines ?? 'embedded';
  const label = randomBytes(4).toString('hex');
  const env: NodeJS.ProcessEnv = set === 'real'
    ? { DATABASE_URL: engines.postgres, REDIS_URL: engines.redis, AMQP_URL: engines.amqp }
    : {};
  const adminToken = generateAdminToken();
  const config = loadConfig(env, {
    port: 0,
    host: '127.0.0.1',
    nodeId: `test-${label}`,
    masterKey: generateMasterKey(),
    adminToken,
    logLevel: 'silent',
    shardCount: 4,
    // Suites send more writes and refused webhooks from one credential and address than any client should; the
    // rate-limit suite (test/integration/http/rate-limits.test.ts) passes the limits it tests.
    rateLimitWritesPerMinute: 1_000_000,
    rateLimitDispatchesPerMinute: 1_000_000,
    rateLimitWebhookFailuresPerMinute: 1_000_000,
    rateLimitWorkerOutputBytesPerMinute: 1_000_000_000,
    rateLimitWebhookDeliveriesPerMinute: 1_000_000,
    rateLimitWorkerHeartbeatsPerMinute: 1_000_000,
    rateLimitWorkerReportsPerMinute: 1_000_000,
    // Schedule suites fire every second or two to see fires within a test.
    scheduleMinIntervalSeconds: 1,
    ...opts.config,
  });
  const schema = `t_node_${label}`;
  const prefix = `troupe-test-${label}`;
  const node = await startNode(config, {
    log: silentLogger(),
    ...(set === 'embedded' ? { pglite: await newMigratedPglite() } : {}),
    ...(set === 'real' ? { searchPath: schema, cachePrefix: `${prefix}:`, transportPrefix: prefix } : {}),
  });
  const url = node.url;
  const injected = nodeInjector(node);

  return {
    node, url, adminToken, config,
    call: (method, path, init = {}) => call(url, method, path, init),
    inject: (method, path, init = {}) => injected(method, path, init),
    async close() {
      const transport = node.deps.transport;
      const db = set === 'real' ? node.deps.db : undefined;
      const dropSchema = db ? async () => {
        const { createDb } = await import('../../storage/db.js');
        const admin = await createDb({ databaseUrl: engines.postgres });
        try { await admin.raw(`drop schema if exists "${schema}" cascade`); } finally { await admin.destroy(); }
      } : undefined;
      await node.close();
      if (transport instanceof AmqpTransport) {
        const connection = await amqp.connect(engines.amqp);
        try { await deleteTopology(await connection.createChannel(), transport.topology); } finally { await connection.close(); }
      }
      if (dropSchema) await dropSchema();
      // Keys like replay markers live for a day; a real-engine run would otherwise leave them behind on the shared Redis.
      if (set === 'real') await deleteKeysWithPrefix(`${prefix}:`);
    },
  };
}

type Inject = (method: string, path: string, init?: CallInit) => Promise<CallResult>;
/** The route table, built once per test process: its routes compile their validators on first use, once. */
let routeTable: ReturnType<typeof allRoutes> | undefined;
const injectors = new WeakMap<TroupeNode, Inject>();

/** Requests into a running node's route table without a socket (`TestNode.inject`). */
export function nodeInjector(node: TroupeNode): Inject {
  let found = injectors.get(node);
  if (found === undefined) injectors.set(node, (found = injector((routeTable ??= allRoutes()), node.deps, { hooks: edgeHooksFor(node.deps) })));
  return found;
}

export async function call(url: string, method: string, path: string, init: CallInit = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  let body: string | Uint8Array | undefined;
  if (init.rawBody !== undefined) body = init.rawBody;
  else if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${url}${path}`, { method, headers, body });
  const text = await response.text();
  let json: unknown;
  try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
  return { status: response.status, headers: response.headers, json, text };
}
