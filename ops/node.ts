import os from 'node:os';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Knex } from 'knex';
import type { PGlite } from '@electric-sql/pglite';
import type { Config } from './kernel/config.js';
import type { Deps } from '../actors/deps.js';
import { createLogger, type Logger } from './kernel/logger.js';
import { driverWarnings } from './kernel/flood-log.js';
import { systemClock, type Clock } from './kernel/clock.js';
import { Secrets } from './kernel/secrets.js';
import { notsentLowatWarning } from './kernel/tcp-notsent-lowat.js';
import { createDb } from '../storage/db.js';
import { migrate } from '../storage/migrations/runner.js';
import { KnexSnapshotStore } from '../storage/knex-snapshot-store.js';
import { MemoryCache } from '../storage/memory-cache.js';
import { RedisCache } from '../storage/redis-cache.js';
import type { Cache } from '../storage/cache.js';
import { LocalTransport } from '../transport/local.js';
import { AmqpTransport } from '../transport/amqp/index.js';
import { Cluster } from '../transport/cluster/index.js';
import { managementUrlFor, vhostOf } from '../transport/amqp/management-api.js';
import { shardOf } from '../transport/shards.js';
import type { Transport } from '../transport/port.js';
import { watchDeadLetters } from '../transport/dead-letter-metrics.js';
import { createActorSystem, type ActorSystem } from '../actors/runtime/index.js';
import { actorKinds } from '../actors/kinds.js';
import { resumeActiveRuns } from '../actors/workflow-run/resume.js';
import { createAuthenticator } from '../actors/identity/authenticator.js';
import { createAuthorizer, loadDefaultPolicySet } from '../actors/identity/authorizer.js';
import { DenialRecorder } from '../storage/governance/authz-denials.js';
import { denialOf } from '../actors/identity/denials.js';
import { auditBreakGlass } from '../actors/identity/break-glass.js';
import { deriveSigningKeys } from '../actors/identity/tokens.js';
import { projectRoleOf } from '../storage/identity/orgs.js';
import { StoredPolicySource } from '../actors/policy/enforcement.js';
import { startHttpServer, type HttpServer } from '../http/server.js';
import { allRoutes } from '../http/routes.js';
import { edgeHooksFor } from '../http/edge-hooks.js';
import { PushOnEvents } from '../actors/integrations/web-push/event-notifications.js';
import { WorkflowSchedules } from '../actors/workflow-schedule/service.js';
import { lifecycleOf } from '../actors/node-services.js';
import { buildNodeServices } from './node-services.js';
import { DependencyWatch } from './dependency-watch.js';
import { registerFleetGauges } from '../actors/fleet/fleet-metrics.js';
import { registerStreamHistoryGauge } from '../actors/fleet/stream-metrics.js';
import { readinessProbesFor } from '../http/routes/readiness.js';
import { consoleRoutes } from '../http/console/routes.js';
import { loadConsoleAssets } from '../http/console/assets.js';
import { consoleDistDir } from '../http/console/location.js';

/**
 * The composition root: one node = storage + transport + actor system + HTTP edge, wired from a validated config.
 * Nothing here decides behaviour; it only picks implementations (embedded or real engines) and orders start-up
 * and shutdown. `config.masterKey` and `config.adminToken` must be resolved before this runs (see ops/main.ts).
 */
export interface TroupeNode {
  readonly deps: Deps;
  readonly actors: ActorSystem;
  readonly http: HttpServer;
  readonly url: string;
  /** Readiness answers 503 from now on while the node keeps serving (the first moment of a shutdown). */
  beginDrain(): void;
  /** Graceful: stop accepting, drain HTTP, stop consuming, drain actors, close connections. Idempotent. */
  close(): Promise<void>;
}

export interface NodeOptions {
  readonly log?: Logger;
  readonly clock?: Clock;
  /** PGlite in memory instead of under the data dir (tests). */
  readonly inMemoryDb?: boolean;
  /** An already-open PGlite (tests clone a migrated template instead of running initdb for every node). */
  readonly pglite?: PGlite;
  /** Postgres schema to work in (tests isolate themselves). */
  readonly searchPath?: string;
  /** Key prefix for Redis (tests isolate themselves). */
  readonly cachePrefix?: string;
  /** Exchange and queue name prefix for RabbitMQ (tests isolate themselves). */
  readonly transportPrefix?: string;
}

export async function startNode(config: Config, options: NodeOptions = {}): Promise<TroupeNode> {
  if (!config.masterKey || !config.adminToken) throw new Error('startNode needs config.masterKey and config.adminToken resolved');
  const log = options.log ?? createLogger({ level: config.logLevel, nodeId: config.nodeId });
  const clock = options.clock ?? systemClock;
  const secrets = Secrets.fromBase64(config.masterKey);
  const metrics = new Registry();
  metrics.setDefaultLabels({ node: config.nodeId });
  collectDefaultMetrics({ register: metrics });

  // Where the start's time goes, logged with "troupe node ready" (decision 0051): each phase's milliseconds, and
  // `startMs` from the process's own start, module loading included.
  const phases: Record<string, number> = {};
  let phaseStart = performance.now();
  const phaseDone = (name: string) => {
    const now = performance.now();
    phases[name] = Math.round(now - phaseStart);
    phaseStart = now;
  };
  phases.modules = Math.round(phaseStart);

  const closers: Array<() => Promise<void>> = [];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) {
      await close().catch((err: unknown) => log.warn({ err }, 'error while closing'));
    }
  };

  try {
    const db = await openStorage(config, options, log);
    closers.push(() => db.destroy());
    phaseDone('storage');

    const { cache, redis } = await openCache(config, options, log);
    closers.push(() => cache.close());
    phaseDone('cache');

    // Cluster (decision 0010): when the broker connection drops, RabbitMQ gives this node's shards to standbys at
    // once, so their actors stop here; `actors` is bound below, before the transport starts.
    let stopShards: (shards: readonly number[]) => void = () => undefined;
    const transport = await openTransport(config, options, log, metrics, (shards) => stopShards(shards));
    watchDeadLetters(metrics, transport.deadLetters);
    const snapshots = new KnexSnapshotStore(db);
    const actors = createActorSystem({
      snapshots, clock, log, metrics,
      passivateAfterMs: config.passivateAfterMs,
      defaultAskTimeoutMs: config.askTimeoutMs,
    });
    const pushOnEvents = new PushOnEvents();
    // Made before the actors because the schedule actor arms its timers and starts runs through it (decision 0027).
    const schedules = new WorkflowSchedules();
    const triggerLimits = {
      schedulesPerOrg: config.schedulesPerOrg, minIntervalSeconds: config.scheduleMinIntervalSeconds, webhookWorkflowsPerOrg: config.webhookWorkflowsPerOrg,
    };
    for (const kind of actorKinds({ transport, pushOnEvents, metrics, schedules, db, triggerLimits })) actors.register(kind);
    registerFleetGauges(metrics, db, () => clock.now(), config.sessionLeaseMs);

    phaseDone('actors');
    const keys = deriveSigningKeys(secrets);
    const auth = createAuthenticator({ db, keys, clock, transport, log });
    // Governance (decision 0009): an org's active stored policies join the defaults in every decision; an erroring
    // statement denies (the authorizer fails closed on evaluation errors) and decisions name the stored policy.
    const storedPolicies = new StoredPolicySource(db, clock);
    // Refusals are buffered and written in batches off the request path (decision 0009 "Recorded denials").
    const denials = new DenialRecorder(db, { clock, onError: (err) => log.warn({ err }, 'could not record authorization denials') });
    const authz = createAuthorizer({
      projectRoleOf: (orgId, userId, projectId) => projectRoleOf(db, orgId, projectId, userId),
      extraPolicies: (orgId, projectId) => storedPolicies.textFor(orgId, projectId),
      onDenied: (principal, action, resource, result) => {
        const denial = denialOf(principal, action, resource, result, clock.now());
        if (denial) denials.record(denial);
      },
      onBreakGlass: auditBreakGlass(db, () => clock.now()),
      transport, clock, log,
    });

    phaseDone('authorizer');
    const base: Omit<Deps, 'services'> = {
      config, log, clock, secrets, db, snapshots, cache, transport, metrics, auth, authz,
      ask: <R>(address: string, message: unknown, timeoutMs?: number) =>
        transport.ask<R>(address, message, { timeoutMs: timeoutMs ?? config.askTimeoutMs }),
    };

    const passivateShards = (shards: readonly number[]) => {
      const lost = new Set(shards);
      return actors.passivateWhere((address) => lost.has(shardOf(address, config.shardCount)));
    };
    stopShards = (shards) => void passivateShards(shards).catch((err: unknown) => log.warn({ err }, 'stopping the actors of lost shards failed'));
    await transport.start(actors.deliver);
    phaseDone('transport');
    // Order matters on the way down: consumers stop before the actors they feed, actors before storage.
    closers.push(() => actors.stop());
    closers.push(() => transport.close());
    // Cluster (decision 0010): presence and shard balancing on RabbitMQ; closed before the transport, so the others
    // hear this node leave and its standbys take its shards when the transport cancels its consumers.
    const cluster = transport.kind === 'amqp' ? await openCluster(config, transport as AmqpTransport, log, metrics, passivateShards) : undefined;
    if (cluster) {
      await cluster.start();
      closers.push(() => cluster.close());
      phaseDone('cluster');
    }
    const services = buildNodeServices(base, { keys, policies: storedPolicies, pushOnEvents, schedules, cluster, redis });
    registerStreamHistoryGauge(metrics, services.streams);
    const deps: Deps = { ...base, services };
    // Node services stop after HTTP drained (pushed later, closed earlier) and before the transport and actors.
    for (const service of lifecycleOf(services)) {
      await service.start(deps);
      closers.push(() => service.stop());
    }
    closers.push(() => auth.close());
    closers.push(() => authz.close());
    closers.push(() => denials.close());
    await Promise.all([auth.ready, authz.ready]);
    phaseDone('services');

    const consoleAssets = loadConsoleAssets(consoleDistDir);
    if (consoleAssets.missing !== undefined) log.warn(consoleAssets.missing);
    const lowat = notsentLowatWarning();
    if (lowat) log.warn({ sysctl: 'net.ipv4.tcp_notsent_lowat', value: lowat.value }, lowat.msg);
    // The console's pages sit beside the API but outside its route table, so they are not in the OpenAPI document.
    const routes = [...allRoutes(), ...consoleRoutes<Deps>(consoleAssets)];
    const http = await startHttpServer({
      routes, deps, host: config.host, port: config.port, log, metrics, trustProxyHops: config.trustProxyHops, ...edgeHooksFor(deps),
      admission: { concurrency: config.writesInFlight, queue: config.writesQueued, maxWaitMs: config.writeQueueWaitMs },
    });
    closers.push(() => http.close(config.shutdownGraceMs));
    phaseDone('http');
    if (cluster) cluster.url = `http://${config.host === '0.0.0.0' ? os.hostname() : config.host}:${http.port}`;
    // Runs that were waiting when the cluster last stopped pick up where their snapshots left them.
    await resumeActiveRuns({ db, log, tell: (address, message) => transport.tell(address, message) })
      .catch((err: unknown) => log.warn({ err }, 'could not resume workflow runs'));
    const engines = { storage: config.databaseUrl ? 'postgres' : 'pglite', transport: transport.kind, cache: config.redisUrl ? 'redis' : 'memory' };
    // The start log says what is reachable (each unreachable one also logs a warning), and troupe_up keeps saying it.
    const { accepting: _accepting, ...dependencyProbes } = readinessProbesFor(deps);
    const watch = new DependencyWatch(dependencyProbes, engines, log.child({ component: 'dependencies' }), metrics);
    const dependencies = await watch.start();
    closers.push(async () => watch.stop());
    phaseDone('resume and probes');
    log.info({ port: http.port, ...engines, dependencies, startMs: Math.round(performance.now()), phases }, 'troupe node ready');
    services.drain.markStarted();
    // Cedar loads with the first decision so an idle embedded node never holds it (decision 0057); a node on real
    // engines is there to serve, so it loads Cedar now, after ready, and its first request does not pay ~0.35 s.
    if (config.databaseUrl) {
      setImmediate(() => {
        try {
          loadDefaultPolicySet();
        } catch (err) {
          log.error({ err }, 'the shipped Cedar schema or policies do not load: every authorisation will fail');
        }
      });
    }

    let closing: Promise<void> | undefined;
    return {
      deps, actors, http,
      url: `http://127.0.0.1:${http.port}`,
      beginDrain: () => services.drain.begin(clock.now()),
      close: () => {
        services.drain.begin(clock.now());
        return (closing ??= closeAll());
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

async function openStorage(config: Config, options: NodeOptions, log: Logger): Promise<Knex> {
  const db = await createDb({
    ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir }),
    ...(options.inMemoryDb ? { inMemory: true } : {}),
    ...(options.pglite ? { pglite: options.pglite } : {}),
    ...(options.searchPath ?? config.databaseSchema ? { searchPath: options.searchPath ?? config.databaseSchema } : {}),
    queryTimeoutMs: config.queryTimeoutMs,
    log: { warn: driverWarnings(log), error: (m) => log.error(m), debug: (m) => log.debug(m) },
  });
  const applied = await migrate(db);
  if (applied.length > 0) log.info({ migrations: applied }, 'migrations applied');
  return db;
}

/*
 * The Redis and RabbitMQ clients stay static imports although an embedded node never uses them: imported lazily,
 * the test processes (which load TypeScript as CommonJS through tsx) got a second copy of every module behind the
 * dynamic import, and a TroupeError of one copy was not an instance of the other's (decision 0051).
 */
async function openCache(config: Config, options: NodeOptions, log: Logger): Promise<{ cache: Cache; redis?: RedisCache['client'] }> {
  if (!config.redisUrl) return { cache: new MemoryCache() };
  const cacheLog = log.child({ component: 'cache' });
  const cache = new RedisCache({
    url: config.redisUrl, keyPrefix: options.cachePrefix ?? config.cachePrefix, connectionName: `troupe-${config.nodeId}`,
    onUnreachable: (err) => cacheLog.warn({ err: err.message }, 'redis is unreachable: rate limits and nonce checks fall back as the spec says until it is back'),
    onReachable: () => cacheLog.info('redis connection is ready again'),
  });
  return { cache, redis: cache.client };
}

async function openTransport(
  config: Config, options: NodeOptions, log: Logger, metrics: Registry, onShardsLost: (shards: readonly number[]) => void,
): Promise<Transport> {
  if (!config.amqpUrl) return new LocalTransport({ nodeId: config.nodeId, log });
  return new AmqpTransport({
    url: config.amqpUrl, nodeId: config.nodeId, shardCount: config.shardCount, log, metrics, onShardsLost,
    prefix: options.transportPrefix ?? config.amqpPrefix,
    // Queues an older Troupe declared get their dead-letter policies through it (decision 0048).
    management: { url: config.amqpManagementUrl ?? managementUrlFor(config.amqpUrl), vhost: vhostOf(config.amqpUrl) },
  });
}

/** Cluster membership and shard placement over the same broker (decision 0010). */
async function openCluster(
  config: Config, transport: AmqpTransport, log: Logger, metrics: Registry, passivateShards: (shards: readonly number[]) => Promise<void>,
): Promise<Cluster> {
  const amqpUrl = config.amqpUrl!;
  return new Cluster({
    transport, amqpUrl, prefix: transport.prefix, nodeId: config.nodeId, shardCount: config.shardCount, metrics,
    log: log.child({ component: 'cluster' }),
    passivateShard: (shard) => passivateShards([shard]),
    management: { url: config.amqpManagementUrl ?? managementUrlFor(amqpUrl), vhost: vhostOf(amqpUrl) },
  });
}
