/**
 * The transport port: how requests reach the one owner of an actor, and how events fan out to every node.
 *
 * Addresses are `kind/id` (`org/7f…`, `session/ab12…`). An address maps to a shard (`shardOf`), and each shard
 * has exactly one consuming node. `ask` delivers a message to the owner and resolves with its reply, or rejects
 * with a TroupeError (the handler's own error rebuilt from the wire, or TRANSPORT_TIMEOUT / TRANSPORT_UNAVAILABLE).
 * `tell` resolves once the message is durably accepted (broker confirm), not when it is handled.
 *
 * Events are published on topics (`org.<orgId>.session.updated`); `subscribe` takes AMQP topic patterns
 * (`*` one word, `#` zero or more) and delivers to this node's handlers only.
 */
export type Unsubscribe = () => Promise<void>;

export interface AskOptions {
  /** Milliseconds until the caller gives up; the owner drops messages whose deadline has passed. */
  timeoutMs: number;
}

/**
 * Runs a delivered message on this node and returns the reply; a thrown TroupeError travels back to the asker.
 * `deadline` (epoch ms) is the asker's: when it stops waiting. Absent for a tell, which no one waits for.
 */
export type DeliveryHandler = (address: string, message: unknown, deadline?: number) => Promise<unknown>;

export type EventHandler = (topic: string, event: unknown) => void;

/** Called with the topic of each event this node was sent but lost before handling it (its event queue overflowed). */
export type LostEventListener = (topic: string) => void;

export interface Transport {
  readonly kind: 'local' | 'amqp';
  /** Connects and starts consuming the shards this node owns, handing each delivery to `handler`. */
  start(handler: DeliveryHandler): Promise<void>;
  ask<R = unknown>(address: string, message: unknown, options: AskOptions): Promise<R>;
  tell(address: string, message: unknown): Promise<void>;
  publish(topic: string, event: unknown): Promise<void>;
  subscribe(pattern: string, handler: EventHandler): Promise<Unsubscribe>;
  /**
   * Hears of events that were on their way to this node and are gone (AMQP: dropped from the head of its full
   * event queue), so live streams can tell their clients to reload; answers a function that stops listening.
   */
  onEventsLost(listener: LostEventListener): () => void;
  /** True when the transport can currently deliver (broker connected). */
  ready(): boolean;
  /** Stops consuming, lets in-flight deliveries finish, then closes connections. */
  close(): Promise<void>;
}
