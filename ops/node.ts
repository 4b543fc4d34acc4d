import os from 'node:os';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Config } from './kernel/config.js';
import type { Deps } from '../actors/services/deps.js';
import { createLogger, type Logger } from './kernel/logger.js';
import { systemClock, type Clock } from './kernel/clock.js';
import { Secrets } from './kernel/secrets.js';
import { KnexSnapshotStore } from '../storage/knex-snapshot-store.js';
import type { AmqpTransport } from '../transport/amqp/index.js';
import type { Cluster } from '../transport/cluster/index.js';
import { shardOf } from '../transport/shards.js';
import type { Transport } from '../transport/port.js';
import { createActorSystem, type ActorSystem } from '../actors/runtime/index.js';
import { actorKinds } from '../actors/kinds/index.js';
import { resumeActiveRuns } from '../actors/kinds/workflow-run/resume.js';
import { loadDefaultPolicySet } from '../actors/services/identity/authorizer.js';
import type { HttpServer } from '../http/server.js';
import { PushOnEvents } from '../actors/services/integrations/web-push/event-notifications.js';
import { AuditOutbox } from '../actors/services/audit/outbox-drain.js';
import { WorkflowSchedules } from '../actors/services/schedules/service.js';
import { lifecycleOf } from '../actors/services/node-services.js';
import { buildNodeServices } from './node-services.js';
import { DependencyWatch } from './dependency-watch.js';
import { registerFleetGauges } from '../actors/services/fleet/fleet-metrics.js';
import { registerStreamHistoryGauge } from '../actors/services/fleet/stream-metrics.js';
import { readinessProbesFor } from '../http/routes/readiness.js';
import { Closers, StartPhases } from './node-lifecycle.js';
import { openCluster, openEngines, type EngineOptions, type Engines } from './node-engines.js';
import { createIdentity, type NodeIdentity } from './node-identity.js';
import { startEdge } from './node-edge.js';

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

export interface NodeOptions extends EngineOptions {
  readonly log?: Logger;
  readonly clock?: Clock;
}

/** What every step of a start reads, and where it leaves what has to close on the way down. */
interface NodeStart {
  readonly config: Config;
  readonly log: Logger;
  readonly clock: Clock;
  readonly metrics: Registry;
  readonly phases: StartPhases;
  readonly closers: Closers;
}

/** The actor system and what its kinds were made with, which the node's services share. */
interface HostedActors {
  readonly actors: ActorSystem;
  readonly snapshots: KnexSnapshotStore;
  readonly pushOnEvents: PushOnEvents;
  readonly audit: AuditOutbox;
  readonly schedules: WorkflowSchedules;
}

export async function startNode(config: Config, options: NodeOptions = {}): Promise<TroupeNode> {
  if (!config.masterKey || !config.adminToken) throw new Error('startNode needs config.masterKey and config.adminToken resolved');
  const log = options.log ?? createLogger({ level: config.logLevel, nodeId: config.nodeId });
  const clock = options.clock ?? systemClock;
  const secrets = Secrets.fromBase64(config.masterKey);
  const s: NodeStart = { config, log, clock, metrics: nodeRegistry(config), phases: new StartPhases(), closers: new Closers(log) };
  try {
    // Cluster (decision 0010): when the broker connection drops, RabbitMQ gives this node's shards to standbys at
    // once, so their actors stop here; `stopShards` is bound below, before the transport starts.
    let stopShards: (shards: readonly number[]) => void = () => undefined;
    const engines = await openEngines(config, options, log, s.metrics, s, (shards) => stopShards(shards));
    const hosted = hostActors(s, engines);
    s.phases.done('actors');
    const identity = createIdentity({ db: engines.db, transport: engines.transport, secrets, clock, log });
    s.phases.done('authorizer');
    const { db, cache, transport } = engines;
    const base: Omit<Deps, 'services'> = {
      config, log, clock, secrets, db, snapshots: hosted.snapshots, cache, transport, metrics: s.metrics, auth: identity.auth, authz: identity.authz,
      ask: <R>(address: string, message: unknown, timeoutMs?: number) =>
        transport.ask<R>(address, message, { timeoutMs: timeoutMs ?? config.askTimeoutMs }),
    };
    const passivateShards = (shards: readonly number[]) => {
      const lost = new Set(shards);
      return hosted.actors.passivateWhere((address) => lost.has(shardOf(address, config.shardCount)));
    };
    stopShards = (shards) => void passivateShards(shards).catch((err: unknown) => log.warn({ err }, 'stopping the actors of lost shards failed'));
    const cluster = await startDelivery(s, transport, hosted.actors, passivateShards);
    const deps = await startServices(s, base, identity, hosted, cluster, engines.redis);
    const http = await startEdge(config, deps, log, s.metrics);
    s.closers.push(() => http.close(config.shutdownGraceMs));
    s.phases.done('http');
    if (cluster) cluster.url = `http://${config.host === '0.0.0.0' ? os.hostname() : config.host}:${http.port}`;
    await announceReady(s, deps, http);

    let closing: Promise<void> | undefined;
    return {
      deps, actors: hosted.actors, http,
      url: `http://127.0.0.1:${http.port}`,
      beginDrain: () => deps.services.drain.begin(clock.now()),
      close: () => {
        deps.services.drain.begin(clock.now());
        return (closing ??= s.closers.closeAll());
      },
    };
  } catch (err) {
    await s.closers.closeAll();
    throw err;
  }
}

function nodeRegistry(config: Config): Registry {
  const metrics = new Registry();
  metrics.setDefaultLabels({ node: config.nodeId });
  collectDefaultMetrics({ register: metrics });
  return metrics;
}

/** The actor system with every kind this node hosts; it receives nothing before the transport starts. */
function hostActors(s: NodeStart, engines: Engines): HostedActors {
  const { config, clock, log, metrics } = s;
  const { db, transport } = engines;
  const snapshots = new KnexSnapshotStore(db);
  const actors = createActorSystem({
    snapshots, clock, log, metrics,
    passivateAfterMs: config.passivateAfterMs,
    defaultAskTimeoutMs: config.askTimeoutMs,
  });
  const pushOnEvents = new PushOnEvents();
  // Made before the actors because a session's stop records its audit entry with the snapshot and wakes the drain.
  const audit = new AuditOutbox(db, log.child({ component: 'audit-outbox' }));
  // Made before the actors because the schedule actor arms its timers and starts runs through it (decision 0027).
  const schedules = new WorkflowSchedules();
  const triggerLimits = {
    schedulesPerOrg: config.schedulesPerOrg, minIntervalSeconds: config.scheduleMinIntervalSeconds, webhookWorkflowsPerOrg: config.webhookWorkflowsPerOrg,
  };
  const ports = { transport, pushOnEvents, metrics, schedules, db, triggerLimits, askTimeoutMs: config.askTimeoutMs, auditRecorded: () => audit.kick() };
  for (const kind of actorKinds(ports)) actors.register(kind);
  registerFleetGauges(metrics, db, () => clock.now(), config.sessionLeaseMs);
  return { actors, snapshots, pushOnEvents, schedules, audit };
}

/** The transport starts feeding the actors; on RabbitMQ the node then joins the cluster. */
async function startDelivery(
  s: NodeStart, transport: Transport, actors: ActorSystem, passivateShards: (shards: readonly number[]) => Promise<void>,
): Promise<Cluster | undefined> {
  await transport.start(actors.deliver);
  s.phases.done('transport');
  // Order matters on the way down: consumers stop before the actors they feed, actors before storage.
  s.closers.push(() => actors.stop());
  s.closers.push(() => transport.close());
  if (transport.kind !== 'amqp') return undefined;
  // Cluster (decision 0010): presence and shard balancing on RabbitMQ; closed before the transport, so the others
  // hear this node leave and its standbys take its shards when the transport cancels its consumers.
  const cluster = await openCluster(s.config, transport as AmqpTransport, s.log, s.metrics, passivateShards);
  await cluster.start();
  s.closers.push(() => cluster.close());
  s.phases.done('cluster');
  return cluster;
}

/** The node's long-lived services, started in order; the node's `Deps` is complete once they are. */
async function startServices(
  s: NodeStart, base: Omit<Deps, 'services'>, identity: NodeIdentity, hosted: HostedActors, cluster: Cluster | undefined,
  redis: Engines['redis'],
): Promise<Deps> {
  const { keys, storedPolicies: policies, auth, authz, denials } = identity;
  const services = buildNodeServices(base, { keys, policies, pushOnEvents: hosted.pushOnEvents, schedules: hosted.schedules, audit: hosted.audit, cluster, redis });
  registerStreamHistoryGauge(s.metrics, services.streams);
  const deps: Deps = { ...base, services };
  // Node services stop after HTTP drained (pushed later, closed earlier) and before the transport and actors.
  for (const service of lifecycleOf(services)) {
    await service.start(deps);
    s.closers.push(() => service.stop());
  }
  s.closers.push(() => auth.close());
  s.closers.push(() => authz.close());
  s.closers.push(() => denials.close());
  await Promise.all([auth.ready, authz.ready]);
  s.phases.done('services');
  return deps;
}

/** Picks up interrupted runs, checks the dependencies, and says the node is ready. */
async function announceReady(s: NodeStart, deps: Deps, http: HttpServer): Promise<void> {
  const { config, log, metrics } = s;
  // Runs that were waiting when the cluster last stopped pick up where their snapshots left them.
  await resumeActiveRuns({ db: deps.db, log, tell: (address, message) => deps.transport.tell(address, message) })
    .catch((err: unknown) => log.warn({ err }, 'could not resume workflow runs'));
  const engines = { storage: config.databaseUrl ? 'postgres' : 'pglite', transport: deps.transport.kind, cache: config.redisUrl ? 'redis' : 'memory' };
  // The start log says what is reachable (each unreachable one also logs a warning), and troupe_up keeps saying it.
  const { accepting: _accepting, ...dependencyProbes } = readinessProbesFor(deps);
  const watch = new DependencyWatch(dependencyProbes, engines, log.child({ component: 'dependencies' }), metrics);
  const dependencies = await watch.start();
  s.closers.push(async () => watch.stop());
  s.phases.done('resume and probes');
  log.info({ port: http.port, ...engines, dependencies, startMs: Math.round(performance.now()), phases: s.phases.phases }, 'troupe node ready');
  deps.services.drain.markStarted();
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
}
