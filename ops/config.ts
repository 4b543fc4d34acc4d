import os from 'node:os';
import { ajv, compileOnFirstUse } from '../schemas/ajv.js';
import type { Config } from './kernel/config.js';

interface EnvBinding {
  env: string;
  key: keyof Config;
  schema: Record<string, unknown>;
  parse?: (raw: string) => unknown;
}

const integer = (raw: string): unknown => (/^-?\d+$/.test(raw) ? Number(raw) : raw);
const boolean = (raw: string): unknown => (raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : raw);
const list = (raw: string): unknown => raw.split(',').map((s) => s.trim()).filter(Boolean);
const IPV4_OCTET = '(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const DNS_SERVER = `^(${IPV4_OCTET}(\\.${IPV4_OCTET}){3}|\\[[0-9A-Fa-f:.]{2,45}\\])(:([1-9]\\d{0,3}|[1-5]\\d{4}|6[0-4]\\d{3}|65[0-4]\\d{2}|655[0-2]\\d|6553[0-5]))?$`;

const bindings: EnvBinding[] = [
  { env: 'PORT', key: 'port', schema: { type: 'integer', minimum: 0, maximum: 65535 }, parse: integer },
  { env: 'HOST', key: 'host', schema: { type: 'string', minLength: 1 } },
  { env: 'TROUPE_DATA_DIR', key: 'dataDir', schema: { type: 'string', minLength: 1 } },
  { env: 'DATABASE_URL', key: 'databaseUrl', schema: { type: 'string', pattern: '^postgres(ql)?://' } },
  { env: 'AMQP_URL', key: 'amqpUrl', schema: { type: 'string', pattern: '^amqps?://' } },
  { env: 'REDIS_URL', key: 'redisUrl', schema: { type: 'string', pattern: '^rediss?://' } },
  { env: 'TROUPE_NODE_ID', key: 'nodeId', schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' } },
  { env: 'TROUPE_MASTER_KEY', key: 'masterKey', schema: { type: 'string', pattern: '^[A-Za-z0-9+/]{43}=$' } },
  { env: 'TROUPE_ADMIN_TOKEN', key: 'adminToken', schema: { type: 'string', minLength: 24 } },
  { env: 'TROUPE_LOG_LEVEL', key: 'logLevel', schema: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] } },
  { env: 'TROUPE_SHARD_COUNT', key: 'shardCount', schema: { type: 'integer', minimum: 1, maximum: 1024 }, parse: integer },
  { env: 'TROUPE_SHUTDOWN_GRACE_MS', key: 'shutdownGraceMs', schema: { type: 'integer', minimum: 0 }, parse: integer },
  { env: 'TROUPE_SHUTDOWN_DELAY_MS', key: 'shutdownDelayMs', schema: { type: 'integer', minimum: 0, maximum: 600000 }, parse: integer },
  { env: 'TROUPE_SHUTDOWN_DEADLINE_MS', key: 'shutdownDeadlineMs', schema: { type: 'integer', minimum: 100 }, parse: integer },
  { env: 'TROUPE_PASSIVATE_AFTER_MS', key: 'passivateAfterMs', schema: { type: 'integer', minimum: 1000 }, parse: integer },
  { env: 'TROUPE_ASK_TIMEOUT_MS', key: 'askTimeoutMs', schema: { type: 'integer', minimum: 10 }, parse: integer },
  { env: 'TROUPE_OUTBOUND_ALLOW', key: 'outboundAllow', schema: { type: 'array', items: { type: 'string', minLength: 1 } }, parse: list },
  { env: 'TROUPE_K_ANONYMITY_FLOOR', key: 'kAnonymityFloor', schema: { type: 'integer', minimum: 1 }, parse: integer },
  { env: 'TROUPE_INCIDENT_IO_SECRET', key: 'incidentIoSecret', schema: { type: 'string', minLength: 1 } },
  { env: 'TROUPE_BEHIND_TLS', key: 'behindTls', schema: { type: 'boolean' }, parse: boolean },
  { env: 'TROUPE_WEB_PUSH_SUBJECT', key: 'webPushSubject', schema: { type: 'string', pattern: '^(mailto:|https://)', maxLength: 512 } },
  { env: 'TROUPE_AMQP_PREFIX', key: 'amqpPrefix', schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,62}$' } },
  { env: 'TROUPE_CACHE_PREFIX', key: 'cachePrefix', schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,63}:$' } },
  { env: 'TROUPE_AMQP_MANAGEMENT_URL', key: 'amqpManagementUrl', schema: { type: 'string', pattern: '^https?://' } },
  { env: 'TROUPE_DATABASE_SCHEMA', key: 'databaseSchema', schema: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$' } },
  // Below a few seconds a worker between two heartbeats would already look dead.
  { env: 'TROUPE_SESSION_LEASE_MS', key: 'sessionLeaseMs', schema: { type: 'integer', minimum: 3000 }, parse: integer },
  { env: 'TROUPE_PUBLIC_URL', key: 'publicUrl', schema: { type: 'string', pattern: '^https?://[^/?#]+$', maxLength: 512 } },
  ...oauthAppBindings('linear'),
  ...oauthAppBindings('github'),
  ...oauthAppBindings('sentry'),
  // Below a few seconds a delivery still on its way through the broker would be sent twice for nothing.
  { env: 'TROUPE_WEBHOOK_RESEND_AFTER_MS', key: 'webhookResendAfterMs', schema: { type: 'integer', minimum: 1000 }, parse: integer },
  { env: 'TROUPE_LINEAR_API_URL', key: 'linearApiUrl', schema: { type: 'string', pattern: '^https?://[^?#]+$', maxLength: 512 } },
  { env: 'TROUPE_GITHUB_API_URL', key: 'githubApiUrl', schema: { type: 'string', pattern: '^https?://[^?#]+$', maxLength: 512 } },
  { env: 'TROUPE_TRACKER_POLL_MS', key: 'trackerPollMs', schema: { type: 'integer', minimum: 100, maximum: 60000 }, parse: integer },
  { env: 'TROUPE_TRACKER_RETRY_BASE_MS', key: 'trackerRetryBaseMs', schema: { type: 'integer', minimum: 10, maximum: 600000 }, parse: integer },
  { env: 'TROUPE_SCHEDULE_SCAN_MS', key: 'scheduleScanMs', schema: { type: 'integer', minimum: 100, maximum: 60000 }, parse: integer },
  { env: 'TROUPE_RATE_LIMIT_WRITES_PER_MINUTE', key: 'rateLimitWritesPerMinute', schema: { type: 'integer', minimum: 1 }, parse: integer },
  { env: 'TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE', key: 'rateLimitDispatchesPerMinute', schema: { type: 'integer', minimum: 1 }, parse: integer },
  { env: 'TROUPE_RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL_PER_HOUR', key: 'rateLimitLoginFailuresPerEmailPerHour', schema: { type: 'integer', minimum: 1 }, parse: integer },
  { env: 'TROUPE_RATE_LIMIT_WEBHOOK_FAILURES_PER_MINUTE', key: 'rateLimitWebhookFailuresPerMinute', schema: { type: 'integer', minimum: 1 }, parse: integer },
  { env: 'TROUPE_RATE_LIMIT_WORKER_OUTPUT_BYTES_PER_MINUTE', key: 'rateLimitWorkerOutputBytesPerMinute', schema: { type: 'integer', minimum: 65536 }, parse: integer },
  { env: 'TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE', key: 'rateLimitWorkerHeartbeatsPerMinute', schema: { type: 'integer', minimum: 60 }, parse: integer },
  { env: 'TROUPE_RATE_LIMIT_WORKER_REPORTS_PER_MINUTE', key: 'rateLimitWorkerReportsPerMinute', schema: { type: 'integer', minimum: 60 }, parse: integer },
  { env: 'TROUPE_STREAMS_PER_ORG', key: 'streamsPerOrg', schema: { type: 'integer', minimum: 1, maximum: 1000000 }, parse: integer },
  { env: 'TROUPE_RATE_LIMIT_WEBHOOK_DELIVERIES_PER_MINUTE', key: 'rateLimitWebhookDeliveriesPerMinute', schema: { type: 'integer', minimum: 1 }, parse: integer },
  { env: 'TROUPE_WEBHOOK_WORKFLOWS_PER_ORG', key: 'webhookWorkflowsPerOrg', schema: { type: 'integer', minimum: 1, maximum: 100000 }, parse: integer },
  { env: 'TROUPE_SCHEDULES_PER_ORG', key: 'schedulesPerOrg', schema: { type: 'integer', minimum: 1, maximum: 100000 }, parse: integer },
  { env: 'TROUPE_SCHEDULE_MIN_INTERVAL_SECONDS', key: 'scheduleMinIntervalSeconds', schema: { type: 'integer', minimum: 1, maximum: 86400 }, parse: integer },
  { env: 'TROUPE_TRUST_PROXY_HOPS', key: 'trustProxyHops', schema: { type: 'integer', minimum: 0, maximum: 10 }, parse: integer },
  { env: 'TROUPE_QUERY_TIMEOUT_MS', key: 'queryTimeoutMs', schema: { type: 'integer', minimum: 100, maximum: 3600000 }, parse: integer },
  { env: 'TROUPE_WRITES_IN_FLIGHT', key: 'writesInFlight', schema: { type: 'integer', minimum: 1, maximum: 100000 }, parse: integer },
  { env: 'TROUPE_WRITES_QUEUED', key: 'writesQueued', schema: { type: 'integer', minimum: 0, maximum: 1000000 }, parse: integer },
  { env: 'TROUPE_WRITE_QUEUE_WAIT_MS', key: 'writeQueueWaitMs', schema: { type: 'integer', minimum: 1, maximum: 600000 }, parse: integer },
  { env: 'TROUPE_MARKETPLACE_LISTINGS_PER_ORG', key: 'marketplaceListingsPerOrg', schema: { type: 'integer', minimum: 1 }, parse: integer },
  { env: 'TROUPE_ALLOW_FILE_REPOSITORIES', key: 'allowFileRepositories', schema: { type: 'boolean' }, parse: boolean },
  { env: 'TROUPE_FOLLOW_UP_GRACE_MS', key: 'followUpGraceMs', schema: { type: 'integer', minimum: 0, maximum: 86400000 }, parse: integer },
  { env: 'TROUPE_TRANSCRIPT_MAX_BYTES', key: 'transcriptMaxBytes', schema: { type: 'integer', minimum: 1024, maximum: 1099511627776 }, parse: integer },
  { env: 'TROUPE_RATE_LIMIT_SSO_STARTS_PER_SOURCE_PER_MINUTE', key: 'rateLimitSsoStartsPerSourcePerMinute', schema: { type: 'integer', minimum: 1 }, parse: integer },
  // Resolvers as c-ares takes them: an IPv4 address or a bracketed IPv6 one, each with an optional port (decision 0091).
  { env: 'TROUPE_SSO_DNS_SERVERS', key: 'ssoDnsServers', schema: { type: 'array', minItems: 1, maxItems: 8, items: { type: 'string', pattern: DNS_SERVER } }, parse: list },
];

/** TROUPE_<PROVIDER>_OAUTH_{BASE_URL,CLIENT_ID,CLIENT_SECRET} for one integration OAuth provider. */
function oauthAppBindings(provider: 'linear' | 'github' | 'sentry'): EnvBinding[] {
  const env = `TROUPE_${provider.toUpperCase()}_OAUTH`;
  return [
    { env: `${env}_BASE_URL`, key: `${provider}OAuthBaseUrl`, schema: { type: 'string', pattern: '^https?://[^?#]+$', maxLength: 512 } },
    { env: `${env}_CLIENT_ID`, key: `${provider}OAuthClientId`, schema: { type: 'string', minLength: 1, maxLength: 512 } },
    { env: `${env}_CLIENT_SECRET`, key: `${provider}OAuthClientSecret`, schema: { type: 'string', minLength: 1, maxLength: 1024 } },
  ];
}

const defaults = (): Config => ({
  port: 8080,
  host: '0.0.0.0',
  dataDir: './data',
  databaseUrl: undefined,
  amqpUrl: undefined,
  redisUrl: undefined,
  nodeId: `${os.hostname()}-${process.pid}`.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 64),
  masterKey: undefined,
  adminToken: undefined,
  logLevel: 'info',
  shardCount: 64,
  shutdownGraceMs: 10_000,
  shutdownDelayMs: 2_000,
  shutdownDeadlineMs: undefined,
  passivateAfterMs: 300_000,
  askTimeoutMs: 5_000,
  outboundAllow: [],
  kAnonymityFloor: 5,
  incidentIoSecret: undefined,
  behindTls: false,
  amqpPrefix: 'troupe',
  cachePrefix: 'troupe:',
  amqpManagementUrl: undefined,
  databaseSchema: undefined,
  sessionLeaseMs: 90_000,
  webPushSubject: undefined,
  publicUrl: undefined,
  linearOAuthBaseUrl: undefined,
  linearOAuthClientId: undefined,
  linearOAuthClientSecret: undefined,
  githubOAuthBaseUrl: undefined,
  githubOAuthClientId: undefined,
  githubOAuthClientSecret: undefined,
  sentryOAuthBaseUrl: undefined,
  sentryOAuthClientId: undefined,
  sentryOAuthClientSecret: undefined,
  webhookResendAfterMs: 60_000,
  scheduleScanMs: 1_000,
  linearApiUrl: undefined,
  githubApiUrl: undefined,
  trackerPollMs: 1_000,
  trackerRetryBaseMs: 2_000,
  rateLimitWritesPerMinute: 600,
  rateLimitDispatchesPerMinute: 120,
  rateLimitLoginFailuresPerEmailPerHour: 100,
  rateLimitWebhookFailuresPerMinute: 30,
  // A busy agent's transcript (tool results with whole files) peaks at tens of KB a second; 16 MiB a minute is ten
  // times the busiest recorded in decision 0066, and 16,384 requests of small chunks.
  rateLimitWorkerOutputBytesPerMinute: 16 * 1024 * 1024,
  // Decision 0082: a worker heartbeats every 15 s (every second on the shortest lease) and polls every 5 s and when
  // offered work; 600 leaves a margin of ten or more, and still bounds what a stolen runtime token makes a node do.
  rateLimitWorkerHeartbeatsPerMinute: 600,
  // A worker of capacity 100 reports four or five statuses per session: hundreds a minute at the busiest; 6,000
  // (100 a second) leaves a margin of ten.
  rateLimitWorkerReportsPerMinute: 6_000,
  // Decision 0082: a console tab holds one or two streams and a worker two (its events and its credential rotations);
  // 2,000 per org on one node is 600 workers and 800 tabs at once, and bounds one org's stream memory near 8 MB
  // (4 KB a stream, PERFORMANCE.md G6).
  streamsPerOrg: 2_000,
  // Ten a second: a busy monorepo's GitHub sends a few; each verified delivery costs a parse of up to 1 MB.
  rateLimitWebhookDeliveriesPerMinute: 600,
  // Issue 30: 50 schedules firing every second started 50 runs a second. These bound one org at 5 runs a second.
  schedulesPerOrg: 50,
  webhookWorkflowsPerOrg: 200,
  scheduleMinIntervalSeconds: 10,
  trustProxyHops: 0,
  queryTimeoutMs: 3_000,
  // Decision 0053: a few writes per pooled Postgres connection (10): more only wait in the pool, and after an outage
  // 256 at once jammed the node for seconds; the queue absorbs a burst, the wait bounds what a refused caller pays.
  writesInFlight: 64,
  writesQueued: 256,
  writeQueueWaitMs: 500,
  marketplaceListingsPerOrg: 50,
  allowFileRepositories: false,
  // Decision 0075: long enough for a busy worker to finish a session and poll, short enough that a follow-up never
  // waits long for a worker that will not come back.
  followUpGraceMs: 60_000,
  // Issue 35 §1, decision 0084: a coding agent's session is megabytes; 64 MiB keeps any real one whole.
  transcriptMaxBytes: 64 * 1024 * 1024,
  // A sign-in page asks once per sign-in; 30 a minute from one address leaves an office behind one NAT room, and bounds
  // what an unauthenticated caller makes the node do (a database read, and a provider's discovery) per address.
  rateLimitSsoStartsPerSourcePerMinute: 30,
  ssoDnsServers: undefined,
});

export class ConfigError extends Error {
  constructor(readonly variable: string, detail: string) {
    super(`invalid configuration: ${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

// Only the variables that are set are validated, so only their schemas are compiled (decision 0051); compiling all
// of them, with a private instance's own meta-schema, cost a tenth of a second of every start.
const validators = new Map(bindings.map((b) => [b.env, compileOnFirstUse(ajv, b.schema as Record<string, unknown>)]));

/** Reads, checks and freezes the configuration; `overrides` serve tests that start nodes in-process. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const config: Record<string, unknown> = { ...defaults() };
  for (const binding of bindings) {
    const raw = env[binding.env];
    if (raw === undefined || raw === '') continue;
    const value = binding.parse ? binding.parse(raw) : raw;
    const validate = validators.get(binding.env)!;
    if (!validate(value)) {
      const why = validate.errors?.[0]?.message ?? 'is invalid';
      throw new ConfigError(binding.env, `${why} (got ${JSON.stringify(binding.key === 'masterKey' || binding.key === 'adminToken' || binding.key.endsWith('ClientSecret') ? '<redacted>' : raw)})`);
    }
    config[binding.key] = value;
  }
  return deepFreeze({ ...config, ...overrides } as Config);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
