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

/**
 * A message no node could handle: its handler crashed on every delivery up to the delivery limit, or it was
 * unreadable (not a v1 envelope, or on the wrong shard). Kept, bounded, until an operator replays or purges it.
 */
export interface DeadLetter {
  /** The message id (a digest of the body when an unreadable message has none); what replay and purge select by. */
  readonly id: string;
  readonly kind: 'ask' | 'tell' | 'unreadable';
  /** The actor address it was for; null when unreadable. */
  readonly address: string | null;
  /** `delivery-limit` (crashed on every delivery), `rejected` (unreadable or misplaced), or the broker's own reason. */
  readonly reason: string;
  /** When it was (last) dead-lettered, ISO 8601; null when the broker did not say. */
  readonly deadLetteredAt: string | null;
  readonly bytes: number;
  /** The message the actor was sent, when readable and at most 16 KiB encoded; null otherwise. */
  readonly payload: unknown;
}

export interface DeadLetterPage {
  /** The oldest first, at most the limit asked for. */
  readonly items: readonly DeadLetter[];
  /** All dead letters kept now. */
  readonly total: number;
  /** The most kept; past it new dead letters wait in their shard queue (AMQP) or are dropped and counted (in-process). */
  readonly bound: number;
  /**
   * `at-least-once`: a dead letter is never dropped on its way (AMQP with the arguments or policies of decision 0048);
   * `at-most-once`: the broker's queues lack them (older queues, no policy yet); `in-process`: kept in this node's
   * memory, gone with it.
   */
  readonly strategy: 'at-least-once' | 'at-most-once' | 'in-process';
  /** In-process only: dead letters dropped because the list was full. */
  readonly overflowed: number;
}

/** Which dead letters an operation takes: these ids, or every one there is. */
export type DeadLetterSelection = { readonly ids: readonly string[] } | { readonly all: true };

export interface DeadLetterOutcome {
  /** Ids acted on. */
  readonly done: readonly string[];
  /** Ids asked for that are not (or no longer) dead letters. */
  readonly notFound: readonly string[];
  /** Ids that cannot be replayed because nothing can read them (purge them instead). */
  readonly unreadable: readonly string[];
}

/**
 * The dead letters of a cluster (AMQP: the one dead-letter queue every node shares) or of this node (in-process).
 * Replay sends each again as a tell to its address, with a fresh time to live: whoever asked has long stopped
 * waiting, so no reply goes anywhere; handlers are idempotent (DESIGN rule 6), so a replay that runs twice is safe.
 */
export interface DeadLetterBox {
  list(limit: number): Promise<DeadLetterPage>;
  replay(selection: DeadLetterSelection): Promise<DeadLetterOutcome>;
  purge(selection: DeadLetterSelection): Promise<DeadLetterOutcome>;
}

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
  /** Messages no node could handle, for operators to list, replay or purge. */
  readonly deadLetters: DeadLetterBox;
  /** True when the transport can currently deliver (broker connected). */
  ready(): boolean;
  /** Stops consuming, lets in-flight deliveries finish, then closes connections. */
  close(): Promise<void>;
}
