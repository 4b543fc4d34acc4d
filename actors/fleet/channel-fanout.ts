/**
 * This node's side of an event stream (DESIGN rule 5): events arrive once per node from the transport and are
 * handed to the local subscribers of their channel (an org, an interview), and the newest `ringSize` of each
 * channel are kept so a client that reconnects with `Last-Event-ID` resumes without a gap.
 *
 * Memory is bounded twice: each ring holds at most `ringSize` events, and at most `maxChannels` rings are kept
 * (the least recently used channel without subscribers is forgotten first). A forgotten or overrun history is
 * reported to the resuming client (`since` answers `found: false`), never silently skipped.
 */
export interface StampedEvent<E> {
  readonly id: string;
  readonly data: E;
}

export type ChannelListener<E> = (event: StampedEvent<E>) => void;

export interface ChannelFanoutOptions {
  /** Events remembered per channel for resumption; 0 keeps none. */
  readonly ringSize: number;
  /** Channels whose history is kept at once. */
  readonly maxChannels: number;
}

interface Channel<E> {
  ring: StampedEvent<E>[];
  readonly listeners: Set<ChannelListener<E>>;
  /** Told when events of this channel were lost on their way to this node. */
  readonly onLost: Set<() => void>;
}

export class ChannelFanout<E> {
  // A Map iterates in insertion order; touching a channel re-inserts it, so the first entries are the coldest.
  private readonly channels = new Map<string, Channel<E>>();

  constructor(private readonly options: ChannelFanoutOptions) {}

  /** Hands `event` to the channel's listeners and remembers it. A throwing listener does not stop the others. */
  deliver(channel: string, event: StampedEvent<E>, onListenerError: (err: unknown) => void = () => {}): number {
    const c = this.touch(channel, this.options.ringSize > 0);
    if (!c) return 0;
    if (this.options.ringSize > 0) {
      c.ring.push(event);
      if (c.ring.length > this.options.ringSize) c.ring.splice(0, c.ring.length - this.options.ringSize);
    }
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
      const at = c.ring.findIndex((e) => e.id === lastEventId);
      found = at >= 0;
      replay = found ? c.ring.slice(at + 1) : [...c.ring];
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
    c.ring = [];
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

  private touch(channel: string, create: boolean): Channel<E> | undefined {
    let c = this.channels.get(channel);
    if (c) {
      this.channels.delete(channel);
      this.channels.set(channel, c);
      return c;
    }
    if (!create) return undefined;
    c = { ring: [], listeners: new Set(), onLost: new Set() };
    this.channels.set(channel, c);
    this.evict();
    return c;
  }

  private evict(): void {
    if (this.channels.size <= this.options.maxChannels) return;
    for (const [key, c] of this.channels) {
      if (this.channels.size <= this.options.maxChannels) return;
      // A channel someone is watching keeps its history; only idle ones are forgotten.
      if (c.listeners.size === 0) this.channels.delete(key);
    }
  }
}
