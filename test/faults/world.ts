import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateAdminToken, generateMasterKey } from '../../ops/secrets.js';
import { killNode, startNodeProcess, type NodeProcess } from '../cluster/processes.js';
import { startPrivatePostgres, startPrivateRabbit, startPrivateRedis, type PrivateEngine } from './engines.js';
import { FaultProxy } from './proxy.js';

/**
 * One fault-test world: private Postgres, RabbitMQ and Redis (test/faults/engines.ts), a TCP proxy in front of each,
 * and one or two Troupe nodes (real processes) that reach every engine through its proxy. `close` stops the nodes,
 * the proxies and the engines by PID.
 */
export interface FaultWorld {
  readonly engines: { readonly postgres: PrivateEngine; readonly rabbitmq: PrivateEngine; readonly redis: PrivateEngine };
  readonly proxies: { readonly postgres: FaultProxy; readonly rabbitmq: FaultProxy; readonly redis: FaultProxy };
  readonly nodes: NodeProcess[];
  readonly adminToken: string;
  /** Direct to the private Postgres, bypassing the proxy (the checker reads the truth here). */
  readonly databaseUrl: string;
  startNode(name: string): Promise<NodeProcess>;
  close(): Promise<void>;
}

export interface WorldOptions {
  readonly nodes?: number;
  /** Extra environment for the nodes (shard count, timeouts, log level). */
  readonly env?: NodeJS.ProcessEnv;
}

export async function startFaultWorld(options: WorldOptions = {}): Promise<FaultWorld> {
  const [postgres, rabbitmq, redis] = await Promise.all([startPrivatePostgres(), startPrivateRabbit(), startPrivateRedis()]);
  const proxies = {
    postgres: await FaultProxy.start(postgres.port),
    rabbitmq: await FaultProxy.start(rabbitmq.port),
    redis: await FaultProxy.start(redis.port),
  };
  const label = randomBytes(3).toString('hex');
  const adminToken = generateAdminToken();
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: proxies.postgres.urlFor(postgres.url),
    AMQP_URL: proxies.rabbitmq.urlFor(rabbitmq.url),
    REDIS_URL: proxies.redis.urlFor(redis.url),
    TROUPE_MASTER_KEY: generateMasterKey(),
    TROUPE_ADMIN_TOKEN: adminToken,
    TROUPE_SHARD_COUNT: '8',
    TROUPE_SHUTDOWN_DELAY_MS: '0',
    TROUPE_SHUTDOWN_GRACE_MS: '2000',
    TROUPE_LOG_LEVEL: 'info',
    // The load is one API key at tens of writes a second: the per-credential limits are not what is tested here.
    TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '10000000',
    TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '10000000',
    // Heartbeats come from a few workers at tens a second each (decision 0082's limit is 600 a minute per worker).
    TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE: '10000000',
    TROUPE_RATE_LIMIT_WORKER_REPORTS_PER_MINUTE: '10000000',
    // The node's management view is optional; the private broker runs without the plugin.
    TROUPE_AMQP_MANAGEMENT_URL: 'http://127.0.0.1:9',
    ...options.env,
  };
  const nodes: NodeProcess[] = [];
  const world: FaultWorld = {
    engines: { postgres, rabbitmq, redis }, proxies, nodes, adminToken, databaseUrl: postgres.url,
    async startNode(name: string) {
      const node = await startNodeProcess(`faults-${label}-${name}`, env, 90_000);
      nodes.push(node);
      return node;
    },
    async close() {
      await Promise.all(nodes.map((n) => killNode(n)));
      await Promise.all(Object.values(proxies).map((p) => p.close()));
      await Promise.all([postgres.destroy(), rabbitmq.destroy(), redis.destroy()]);
    },
  };
  try {
    // The first node runs the migrations; the others start against a ready schema.
    for (let i = 0; i < (options.nodes ?? 1); i++) await world.startNode(String.fromCharCode(97 + i));
  } catch (err) {
    await world.close();
    throw err;
  }
  return world;
}

/**
 * After a suite with a failed test, each node's log lines go to a file named in the output: a failure is diagnosed
 * from the node's own account.
 */
export function saveNodeLogsIfFailed(suite: Mocha.Context, world: FaultWorld | undefined): void {
  if (!world || !suite.test?.parent?.tests.some((t) => t.state === 'failed')) return;
  for (const n of world.nodes) {
    const file = path.join(tmpdir(), `${n.nodeId}.log`);
    writeFileSync(file, n.lines.join('\n'));
    console.log(`      node log: ${file}`);
  }
}
