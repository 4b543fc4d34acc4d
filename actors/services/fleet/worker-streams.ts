import type { Unsubscribe } from '../../../transport/port.js';
import type { Deps } from '../deps.js';
import type { NodeService } from '../node-service.js';
import { parsePendingEvent, PENDING_TOPIC } from '../daemon/pending-index.js';
import { offerPausesOf } from '../../../storage/queue-control/pauses.js';
import { WORKER_SIGNAL_PATTERN, type WorkerSignal, type WorkerSignalBatch } from '../../kinds/session/worker-signals.js';
import { OfferPauses, type LoadPauses, type OrgPauses } from './offer-pauses.js';

/**
 * This node's connected workers (`GET /api/daemon/events`, decision 0021) and the two topics that feed them: the
 * session actors' worker signals (`org.<orgId>.daemon.signal`) and the daemon-host actors' pending-mutation counts
 * (`daemon.pending`). Each node subscribes to both once and hands an event only to its own streams it concerns:
 * offers and poll nudges to the org's workers that serve the project, stops, prompts and follow-ups to the one worker named,
 * a mutation nudge to the worker whose queue grew. An offer is not pushed for a paused project's queue, nor to a
 * paused worker (decision 0079; ./offer-pauses.ts keeps the org's pauses, and every signal of an org passes through
 * it in order). Nothing else is remembered: a worker that reconnects polls and reconciles what it holds
 * (`GET /api/daemon/sessions`), so a missed event costs latency, never correctness.
 */
export interface WorkerConnection {
  readonly workerId: string;
  readonly orgId: string;
  /** The projects of the worker's runtime token when it connected; the worker reconnects when they change. */
  readonly projectIds: ReadonlySet<string>;
  send(event: string, data: unknown): void;
}

export class WorkerStreams implements NodeService {
  readonly name = 'worker-streams';
  private readonly byOrg = new Map<string, Set<WorkerConnection>>();
  private readonly byWorker = new Map<string, Set<WorkerConnection>>();
  private readonly unsubscribers: Unsubscribe[] = [];
  private subscribing: Promise<void> | undefined;
  private subscribed = false;
  private readonly pauses: OfferPauses;

  constructor(
    private readonly subscribe: (pattern: string, handler: (topic: string, event: unknown) => void) => Promise<Unsubscribe>,
    private readonly log: Deps['log'],
    loadPauses: LoadPauses,
  ) {
    this.pauses = new OfferPauses(loadPauses, (orgId, err) => this.log.warn({ err, orgId }, 'could not read the pauses of an org; offers become poll nudges'));
  }

  start(): void {}

  /** Resolves once this node receives both topics; the route awaits it before a worker's stream opens. */
  ready(): Promise<void> {
    if (this.subscribed) return Promise.resolve();
    this.subscribing ??= (async () => {
      try {
        this.unsubscribers.push(await this.subscribe(WORKER_SIGNAL_PATTERN, (topic, event) => this.onSignals(topic, event)));
        this.unsubscribers.push(await this.subscribe(PENDING_TOPIC, (_topic, event) => this.onPending(event)));
        this.subscribed = true;
      } catch (err) {
        await Promise.all(this.unsubscribers.splice(0).map((u) => u().catch(() => undefined)));
        throw err;
      } finally {
        this.subscribing = undefined;
      }
    })();
    return this.subscribing;
  }

  attach(conn: WorkerConnection): () => void {
    add(this.byOrg, conn.orgId, conn);
    add(this.byWorker, conn.workerId, conn);
    this.pauses.prefetch(conn.orgId);
    return () => {
      remove(this.byOrg, conn.orgId, conn);
      remove(this.byWorker, conn.workerId, conn);
      if (!this.byOrg.has(conn.orgId)) this.pauses.forget(conn.orgId);
    };
  }

  /** Connected streams on this node (metrics, tests). */
  connections(): number {
    let n = 0;
    for (const set of this.byWorker.values()) n += set.size;
    return n;
  }

  async stop(): Promise<void> {
    await this.subscribing?.catch(() => undefined);
    await Promise.all(this.unsubscribers.splice(0).map((u) => u().catch((err: unknown) => this.log.warn({ err }, 'could not unsubscribe a worker topic'))));
    this.subscribed = false;
  }

  private onSignals(topic: string, event: unknown): void {
    const batch = event as Partial<WorkerSignalBatch> | null;
    const orgId = topic.split('.')[1];
    // Only what the topic says about the org is trusted: a body naming another org is dropped.
    if (!orgId || batch?.orgId !== orgId || !Array.isArray(batch.signals)) return;
    // No worker of the org is connected here: nothing to send, and its pauses need not be known.
    if (!this.byOrg.has(orgId)) return;
    for (const signal of batch.signals as WorkerSignal[]) {
      if (signal?.kind === 'pausesChanged') this.pauses.changed(orgId);
      else this.pauses.run(orgId, (pauses) => this.deliver(orgId, signal, pauses));
    }
  }

  /** `pauses` undefined: they could not be read, and an offer becomes a nudge to poll, whose query knows them. */
  private deliver(orgId: string, signal: WorkerSignal, pauses: OrgPauses | undefined): void {
    switch (signal.kind) {
      case 'offer':
        if (pauses === undefined) return this.toProject(orgId, signal.projectId, 'poll', { projectId: signal.projectId });
        if (pauses.projects.has(signal.projectId)) return;
        // Whether a keyed session's key has room is the poll's to decide (decision 0081): workers are asked to poll.
        if (signal.concurrencyKey !== undefined && pauses.limitedProjects?.has(signal.projectId)) {
          return this.toProject(orgId, signal.projectId, 'poll', { projectId: signal.projectId });
        }
        return this.toProject(orgId, signal.projectId, 'offer', { session: signal.session }, pauses.workers);
      case 'poll':
        return this.toProject(orgId, signal.projectId, 'poll', { projectId: signal.projectId });
      case 'stop':
        return this.toWorker(orgId, signal.workerId, 'stop', { sessionId: signal.sessionId, status: signal.status, reason: signal.reason });
      case 'prompt':
      case 'followUp':
        return this.toWorker(orgId, signal.workerId, 'poll', { sessionId: signal.sessionId });
      case 'pollWorker':
        return this.toWorker(orgId, signal.workerId, 'poll', {});
    }
  }

  private onPending(event: unknown): void {
    const e = parsePendingEvent(event);
    if (!e || e.pending === 0) return;
    for (const conn of this.byWorker.get(e.workerId) ?? []) this.send(conn, 'mutation', { pending: e.pending });
  }

  private toProject(orgId: string, projectId: unknown, event: string, data: unknown, skipWorkers?: ReadonlySet<string>): void {
    if (typeof projectId !== 'string') return;
    for (const conn of this.byOrg.get(orgId) ?? []) {
      if (conn.projectIds.has(projectId) && skipWorkers?.has(conn.workerId) !== true) this.send(conn, event, data);
    }
  }

  private toWorker(orgId: string, workerId: unknown, event: string, data: unknown): void {
    if (typeof workerId !== 'string') return;
    for (const conn of this.byWorker.get(workerId) ?? []) if (conn.orgId === orgId) this.send(conn, event, data);
  }

  private send(conn: WorkerConnection, event: string, data: unknown): void {
    try {
      conn.send(event, data);
    } catch (err) {
      this.log.warn({ err, workerId: conn.workerId }, 'could not write to a worker stream');
    }
  }
}

function add<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}

function remove<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}

/** The node's worker streams (`deps.services.workers`). */
export const workerStreams = (deps: Pick<Deps, 'services'>): WorkerStreams => deps.services.workers;

export function createWorkerStreams(deps: Pick<Deps, 'log' | 'transport' | 'db'>): WorkerStreams {
  return new WorkerStreams(
    (pattern, handler) => deps.transport.subscribe(pattern, handler), deps.log.child({ component: 'worker-streams' }),
    (orgId) => offerPausesOf(deps.db, orgId),
  );
}
