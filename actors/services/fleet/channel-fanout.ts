/**
 * This node's side of an event stream (DESIGN rule 5): events arrive once per node from the transport and are
 * handed to the local subscribers of their channel (an org, an interview), and the newest of each channel are kept
 * so a client that reconnects with `Last-Event-ID` resumes without a gap.
 *
 * What is kept is bounded in events and in bytes (issue 30: a worker posting 1 MB of tokens over and over grew a
 * node's heap by 800 MB when only frames were counted):
 * - per channel, at most `ringSize` events and `ringBytes` bytes;
 * - per org (the channel's first `/`-separated part), at most `orgBytes` bytes and `maxChannelsPerOrg` channels, so
 *   one tenant spends only its share;
 * - in all, at most `totalBytes` bytes and `maxChannels` channels.
 * Past a byte bound the oldest events of the least recently used channels go first (the org's own, for its share);
 * past a channel bound the least recently used channel nobody watches is forgotten. A forgotten or overrun history is
 * reported to the resuming client (`subscribe` answers `found: false`), never silently skipped.
 */
export interface StampedEvent<E> {
  readonly id: string;
  readonly data: E;
}

export type ChannelListener<E> = (event: StampedEvent<E>) => void;

export interface ChannelFanoutOptions<E> {
  /** Events remembered per channel for resumption; 0 keeps none. */
  readonly ringSize: number;
  /** Channels whose history is kept at once. */
  readonly maxChannels: number;
  /** Bytes of history one channel keeps. */
  readonly ringBytes?: number;
  /** Bytes of history all channels of one org keep together. */
  readonly orgBytes?: number;
  /** Bytes of history kept in all. */
  readonly totalBytes?: number;
  /** Channels of one org kept at once. */
  readonly maxChannelsPerOrg?: number;
  /** An event's size in bytes, as counted against the byte bounds (an estimate of what holding it costs). */
  readonly sizeOf?: (event: E) => number;
}

interface Kept<E> {
  readonly event: StampedEvent<E>;
  readonly bytes: number;
}

interface Channel<E> {
  readonly name: string;
  readonly org: Org<E>;
  ring: Kept<E>[];
  bytes: number;
  readonly listeners: Set<ChannelListener<E>>;
  /** Told when events of this channel were lost on their way to this node. */
  readonly onLost: Set<() => void>;
}

interface Org<E> {
  readonly id: string;
  bytes: number;
  /** Least recently used first, like the fan-out's own map. */
  readonly channels: Map<string, Channel<E>>;
}

/** Fixed cost of an event of unknown size: its id, envelope and bookkeeping. */
const EVENT_OVERHEAD_BYTES = 200;

export class ChannelFanout<E> {
  // A Map iterates in insertion order; touching a channel re-inserts it, so the first entries are the coldest.
  private readonly channels = new Map<string, Channel<E>>();
  private readonly orgs = new Map<string, Org<E>>();
  private keptBytes = 0;
  private readonly ringBytes: number;
  private readonly orgBytes: number;
  private readonly totalBytes: number;
  private readonly maxChannelsPerOrg: number;
  private readonly sizeOf: (event: E) => number;

  constructor(private readonly options: ChannelFanoutOptions<E>) {
    this.ringBytes = options.ringBytes ?? Infinity;
    this.orgBytes = options.orgBytes ?? Infinity;
    this.totalBytes = options.totalBytes ?? Infinity;
    this.maxChannelsPerOrg = options.maxChannelsPerOrg ?? Infinity;
    this.sizeOf = options.sizeOf ?? (() => EVENT_OVERHEAD_BYTES);
  }

  /** Hands `event` to the channel's listeners and remembers it. A throwing listener does not stop the others. */
  deliver(channel: string, event: StampedEvent<E>, onListenerError: (err: unknown) => void = () => {}): number {
    const c = this.touch(channel, this.options.ringSize > 0);
    if (!c) return 0;
    if (this.options.ringSize > 0) this.keep(c, event);
    for (const listener of [...c.listeners]) {
      try {
        listener(event);
      } catch (err) {
        onListenerError(err);
      }
    }
    return c.listeners.size;
  }

  /**
   * Registers a listener and, in the same synchronous step, returns the remembered events after `lastEventId`
   * (so nothing published in between is lost or doubled). `found: false` means the history no longer reaches
   * back to that id: the client missed events and should reload.
   */
  subscribe(channel: string, listener: ChannelListener<E>, lastEventId?: string, onLost?: () => void): {
    replay: readonly StampedEvent<E>[]; found: boolean; unsubscribe: () => void;
  } {
    const c = this.touch(channel, true)!;
    let replay: StampedEvent<E>[] = [];
    let found = true;
    if (lastEventId !== undefined) {
      const at = c.ring.findIndex((k) => k.event.id === lastEventId);
      found = at >= 0;
      replay = (found ? c.ring.slice(at + 1) : c.ring).map((k) => k.event);
    }
    c.listeners.add(listener);
    if (onLost) c.onLost.add(onLost);
    return {
      replay, found,
      unsubscribe: () => {
        c.listeners.delete(listener);
        if (onLost) c.onLost.delete(onLost);
      },
    };
  }

  /**
   * Events of `channel` were lost before reaching this node: its subscribers are told (they reload), and its history
   * is forgotten, since it now has a hole that a resuming client must not be replayed across.
   */
  lost(channel: string, onListenerError: (err: unknown) => void = () => {}): number {
    const c = this.channels.get(channel);
    if (!c) return 0;
    this.clear(c);
    for (const notify of [...c.onLost]) {
      try {
        notify();
      } catch (err) {
        onListenerError(err);
      }
    }
    return c.onLost.size;
  }

  listenerCount(channel: string): number {
    return this.channels.get(channel)?.listeners.size ?? 0;
  }

  /** What the history holds now, for `/metrics` and the tests of the bounds. */
  usage(orgId?: string): { bytes: number; channels: number } {
    if (orgId === undefined) return { bytes: this.keptBytes, channels: this.channels.size };
    const org = this.orgs.get(orgId);
    return { bytes: org?.bytes ?? 0, channels: org?.channels.size ?? 0 };
  }

  private keep(c: Channel<E>, event: StampedEvent<E>): void {
    const bytes = this.sizeOf(event.data) + EVENT_OVERHEAD_BYTES;
    if (bytes > this.ringBytes || bytes > this.orgBytes || bytes > this.totalBytes) {
      // Kept history must have no hole a resuming client could be replayed across: an event too large to keep ends it.
      this.clear(c);
      return;
    }
    c.ring.push({ event, bytes });
    this.count(c, bytes);
    while (c.ring.length > this.options.ringSize || c.bytes > this.ringBytes) this.dropOldest(c);
    while (c.org.bytes > this.orgBytes) this.dropOldest(firstKeeping(c.org.channels.values())!);
    while (this.keptBytes > this.totalBytes) this.dropOldest(firstKeeping(this.channels.values())!);
  }

  private dropOldest(c: Channel<E>): void {
    const dropped = c.ring.shift()!;
    this.count(c, -dropped.bytes);
    if (c.ring.length === 0) this.forgetIfIdle(c);
  }

  private clear(c: Channel<E>): void {
    this.count(c, -c.bytes);
    c.ring = [];
  }

  private count(c: Channel<E>, bytes: number): void {
    c.bytes += bytes;
    c.org.bytes += bytes;
    this.keptBytes += bytes;
  }

  private touch(channel: string, create: boolean): Channel<E> | undefined {
    let c = this.channels.get(channel);
    if (c) {
      this.channels.delete(channel);
      this.channels.set(channel, c);
      c.org.channels.delete(channel);
      c.org.channels.set(channel, c);
      return c;
    }
    if (!create) return undefined;
    const orgId = channel.split('/', 1)[0]!;
    let org = this.orgs.get(orgId);
    if (!org) {
      org = { id: orgId, bytes: 0, channels: new Map() };
      this.orgs.set(orgId, org);
    }
    c = { name: channel, org, ring: [], bytes: 0, listeners: new Set(), onLost: new Set() };
    this.channels.set(channel, c);
    org.channels.set(channel, c);
    this.evict(org.channels, this.maxChannelsPerOrg, c);
    this.evict(this.channels, this.options.maxChannels, c);
    return c;
  }

  /**
   * Forgets the coldest channels of `among` that nobody watches, other than `keeping` (the one being made), until at
   * most `max` are left or none is idle.
   */
  private evict(among: Map<string, Channel<E>>, max: number, keeping: Channel<E>): void {
    if (among.size <= max) return;
    for (const c of [...among.values()]) {
      if (among.size <= max) return;
      // A channel someone is watching keeps its history; only idle ones are forgotten.
      if (c.listeners.size === 0 && c !== keeping) this.forget(c);
    }
  }

  private forgetIfIdle(c: Channel<E>): void {
    if (c.listeners.size === 0 && c.onLost.size === 0) this.forget(c);
  }

  private forget(c: Channel<E>): void {
    this.clear(c);
    this.channels.delete(c.name);
    c.org.channels.delete(c.name);
    if (c.org.channels.size === 0) this.orgs.delete(c.org.id);
  }
}

function firstKeeping<E>(channels: Iterable<Channel<E>>): Channel<E> | undefined {
  for (const c of channels) if (c.ring.length > 0) return c;
  return undefined;
}
