import type { Channel, ChannelModel, ConfirmChannel, RecoveringChannelModel } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { TransportMetrics } from './metrics.js';
import { brokerSocket, coalesceBrokerWrites } from './coalesce-writes.js';
import { BrokerLivenessProbe, type BrokerLivenessOptions } from './broker-liveness.js';

/** The longest wait between two attempts to reach a broker that is down. */
export const RECONNECT_MAX_DELAY_MS = 1_000;

/** The transport's life: `running` from `start` until `close` begins, whether or not a session is up. */
export type LinkState = 'idle' | 'running' | 'draining' | 'closed';

/** Everything that belongs to one broker connection; replaced wholesale on reconnect. */
export interface Session {
  readonly model: ChannelModel;
  /** Confirm channel for asks, tells and events; also consumes direct reply-to, as RabbitMQ requires. */
  readonly publisher: ConfirmChannel;
  /** Shard and event consumers; replies and acks go out on it, reply first. */
  readonly consumer: Channel;
  /** The event consumer; shard consumers come and go with placement and live in the shard ownership. */
  readonly consumerTags: string[];
  /** This connection's inbox for owner-routed asks (exclusive: it goes with the connection); undefined when off. */
  readonly inbox: string | undefined;
}

export interface ConnectionOptions {
  /** amqp://user:pass@host:port/vhost */
  readonly url: string;
  /** The name the connection shows in the management console (client property `connection_name`). */
  readonly name: string;
  readonly heartbeatSeconds: number;
  readonly initialConnectRetries: number;
  readonly confirmTimeoutMs: number;
  /** How a broker that stopped answering is noticed before the heartbeats do (broker-liveness.ts); false: off. */
  readonly liveness: BrokerLivenessOptions | false;
  readonly log: Logger;
  readonly metrics: TransportMetrics | undefined;
}

/** What the rest of the transport does at the connection's turning points. */
export interface ConnectionHooks {
  /**
   * Makes a new connection's session on its fresh channels (topology, consumers, inbox); runs on every (re)connect,
   * before the connection counts as up. A throw makes recovery retry with backoff.
   */
  prepare(model: ChannelModel, consumer: Channel, publisher: ConfirmChannel): Promise<Session>;
  /** The session is visible now: `liveSession` answers it. */
  live(session: Session): void;
  /** The session is gone (the connection dropped or a channel closed): what waited on it fails, its shards are lost. */
  lost(reason: string): void;
  /** Closing: stop taking deliveries and finish those taken, while the session (if any) is still there. */
  drain(session: Session | undefined): Promise<void>;
  /** Closed: nothing can arrive any more. */
  closed(): void;
}

/**
 * The broker connection and its session. amqplib's built-in recovery reconnects with backoff and runs `setup` on
 * every connection, which re-declares the topology, re-binds event patterns and restarts consumers (through
 * `hooks.prepare`). While disconnected there is no session: senders fail at once with TRANSPORT_UNAVAILABLE.
 */
export class BrokerConnection {
  private current: LinkState = 'idle';
  private live: Session | undefined;
  private connection: RecoveringChannelModel | undefined;
  private connections = 0;
  private closing: Promise<void> | undefined;
  private probe: BrokerLivenessProbe | undefined;

  constructor(private readonly options: ConnectionOptions, private readonly hooks: ConnectionHooks) {}

  get state(): LinkState {
    return this.current;
  }

  /** The current connection's session; undefined while disconnected (or while a new one is being set up). */
  get session(): Session | undefined {
    return this.live;
  }

  /** How many times a broker connection has been set up; grows by one on every successful reconnect. */
  get count(): number {
    return this.connections;
  }

  async start(): Promise<void> {
    if (this.current !== 'idle') throw new TroupeError('INTERNAL', `transport cannot start while ${this.current}`);
    this.current = 'running';
    const log = this.options.log;
    const url = new URL(this.options.url);
    if (!url.searchParams.has('heartbeat')) url.searchParams.set('heartbeat', String(this.options.heartbeatSeconds));
    try {
      // Loaded when a node first connects, not with the module: a node on the embedded defaults never needs amqplib
      // (decision 0057, G10).
      const { default: amqp } = await import('amqplib');
      const connection = await amqp.connect(url.toString(), {
        clientProperties: { connection_name: this.options.name },
        // Without it, Nagle's algorithm holds small frames (a reply, an ack) back for the peer's delayed ACK:
        // ~40 ms per sequential ask, measured with ops/bench/transport-ask.ts.
        noDelay: true,
        recovery: {
          initialDelay: 100,
          // Issue 20: "first confirmed publish ≤ 5 s after the broker is back". A 5 s cap left up to 5 s between the
          // broker answering and our next attempt (12.9 s measured with topology and shards after it). An attempt at
          // a broker that is down costs one refused TCP connection, so every node trying each second is cheap.
          maxDelay: RECONNECT_MAX_DELAY_MS,
          maxRetries: Infinity,
          initialMaxRetries: this.options.initialConnectRetries,
          waitForConnect: false,
          setup: (model: ChannelModel) => this.setup(model),
        },
      });
      this.connection = connection;
      connection.on('disconnect', (err: Error) => this.onDisconnect(err));
      connection.on('connect-failed', (err: Error) => log.warn({ err: err.message }, 'broker connection attempt failed'));
      connection.on('error', (err: Error) => log.warn({ err: err.message }, 'broker connection error'));
      connection.on('blocked', (reason: string) => log.warn({ reason }, 'broker blocked publishing'));
      connection.on('unblocked', () => log.info('broker unblocked publishing'));
      await connection.waitForConnect();
    } catch (err) {
      this.current = 'closed';
      await this.connection?.close().catch(() => undefined);
      throw new TroupeError('TRANSPORT_UNAVAILABLE', 'cannot reach the message broker', { reason: (err as Error).message });
    }
  }

  ready(): boolean {
    return this.current === 'running' && this.live !== undefined;
  }

  /** The session to send on now, or TRANSPORT_UNAVAILABLE saying why there is none. */
  liveSession(): Session {
    if (this.current === 'closed') throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is closed');
    if (this.current === 'idle') throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is not started');
    if (!this.live) throw new TroupeError('TRANSPORT_UNAVAILABLE', 'not connected to the message broker');
    return this.live;
  }

  publishConfirmed(
    session: Session, exchange: string, routingKey: string, body: Buffer,
    properties: { persistent: boolean; messageId: string; type: string; replyTo?: string; correlationId?: string },
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // A blocked broker (memory or disk alarm) withholds confirms; the caller learns within a bound instead of hanging.
      const timer = setTimeout(
        () => reject(new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker did not confirm in time; the message may still be delivered')),
        this.options.confirmTimeoutMs,
      );
      try {
        session.publisher.publish(exchange, routingKey, body, { ...properties, contentType: 'application/json' }, (err: unknown) => {
          clearTimeout(timer);
          if (err) reject(new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker did not accept the message'));
          else resolve();
        });
      } catch (err) {
        clearTimeout(timer);
        reject(new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker channel is closed', { reason: (err as Error).message }));
      }
    });
  }

  /** A channel the broker closed, or a shard consumer it cancelled, is recovered with a new connection (`setup`). */
  recycle(model: ChannelModel): void {
    if (this.current !== 'running' || this.live?.model !== model) return;
    this.options.log.warn('a broker channel closed; recycling the connection');
    this.live = undefined;
    this.hooks.lost('a broker channel closed');
    model.close().catch(() => undefined);
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.current === 'idle') {
      this.current = 'closed';
      return;
    }
    this.current = 'draining';
    this.probe?.stop();
    await this.hooks.drain(this.live);
    this.current = 'closed';
    this.hooks.closed();
    this.live = undefined;
    this.options.metrics?.connected.set(0);
    await this.connection?.close().catch((err: unknown) => this.options.log.warn({ err }, 'closing the broker connection failed'));
  }

  /** Runs on every (re)connect, before the connection counts as up; a throw makes recovery retry with backoff. */
  private async setup(model: ChannelModel): Promise<void> {
    const log = this.options.log;
    const started = performance.now();
    model.on('error', (err: Error) => log.warn({ err: err.message }, 'broker connection error'));
    coalesceBrokerWrites(model);
    // Opened together: each open is a round trip, and on a node busy after an outage a round trip is slow.
    const [consumer, publisher, probeChannel] = await Promise.all([
      model.createChannel(),
      model.createConfirmChannel(),
      this.options.liveness === false ? undefined : model.createChannel(),
    ]);
    for (const channel of [consumer, publisher]) {
      channel.on('error', (err: Error) => log.warn({ err: err.message }, 'broker channel error'));
      // amqplib recovers connections, not channels: a channel the broker closed (a precondition failure) is
      // recovered by recycling the whole connection, which re-runs this setup.
      channel.on('close', () => this.recycle(model));
    }
    probeChannel?.on('error', (err: Error) => log.warn({ err: err.message }, 'broker probe channel error'));
    const session = await this.hooks.prepare(model, consumer, publisher);
    if (this.current !== 'running') return;
    this.live = session;
    this.connections += 1;
    // How long a reconnect spends declaring topology and consumers before senders may use it (issue 20's figure).
    log.info({ setupMs: Math.round(performance.now() - started), connections: this.connections }, 'broker session set up');
    this.options.metrics?.connected.set(1);
    this.hooks.live(session);
    if (probeChannel && this.options.liveness !== false) {
      this.probe?.stop();
      this.probe = new BrokerLivenessProbe(probeChannel, (silentMs) => this.onHung(model, silentMs), this.options.liveness);
      this.probe.start();
    }
  }

  /**
   * The broker stopped answering on an open connection: from now on senders fail at once (TRANSPORT_UNAVAILABLE,
   * a 503 at the edge), whatever waited on the session fails, and the socket is dropped so amqplib's recovery
   * reconnects once the broker answers again.
   */
  private onHung(model: ChannelModel, silentMs: number): void {
    if (this.current !== 'running' || this.live?.model !== model) return;
    this.options.log.warn({ silentMs }, 'the broker stopped answering; dropping the connection and reconnecting');
    this.options.metrics?.brokerHung.inc();
    this.live = undefined;
    this.options.metrics?.connected.set(0);
    this.hooks.lost('the broker stopped answering');
    // Destroying the socket is what a dead network does.
    brokerSocket(model)?.destroy(new Error('broker silent'));
  }

  private onDisconnect(err: Error): void {
    this.probe?.stop();
    this.probe = undefined;
    this.live = undefined;
    this.options.metrics?.connected.set(0);
    this.hooks.lost('the broker connection was lost');
    if (this.current === 'running') this.options.log.warn({ err: err.message }, 'broker connection lost; reconnecting');
  }
}
