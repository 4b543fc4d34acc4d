import type { Transport, Unsubscribe } from '../../transport/port.js';
import type { Logger } from '../../ops/kernel/logger.js';

/**
 * Listeners woken by events from any node: a nudge says only "look again" (a transcript grew, a gate was decided), and
 * whoever is woken reads what changed from storage. So a nudge may be lost, late or repeated without a listener
 * missing or repeating anything; listeners also look on a timer of their own in case one was lost.
 *
 * Each route maps an AMQP topic pattern's events to the channel they wake (or none). Subscriptions are made when the
 * first listener needs them (`ready`), not at start, and a listener awaits `ready` before its first read, so no event
 * falls between the read and the subscription.
 */
export interface NudgeRoute {
  readonly pattern: string;
  channelOf(topic: string, event: unknown): string | undefined;
}

export class Nudges {
  private readonly wakers = new Map<string, Set<() => void>>();
  private subscribing: Promise<void> | undefined;
  private readonly unsubscribes: Unsubscribe[] = [];

  constructor(private readonly transport: Transport, private readonly log: Logger, private readonly routes: readonly NudgeRoute[]) {}

  ready(): Promise<void> {
    this.subscribing ??= (async () => {
      for (const route of this.routes) {
        this.unsubscribes.push(await this.transport.subscribe(route.pattern, (topic, event) => {
          const channel = route.channelOf(topic, event);
          if (channel !== undefined) this.wake(channel);
        }));
      }
    })().catch((err: unknown) => {
      this.subscribing = undefined;
      throw err;
    });
    return this.subscribing;
  }

  /** Calls `wake` whenever an event for `channel` arrives; the returned function stops it. */
  listen(channel: string, wake: () => void): () => void {
    let set = this.wakers.get(channel);
    if (!set) this.wakers.set(channel, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.wakers.get(channel) === set) this.wakers.delete(channel);
    };
  }

  /** Resolves at the first event for any of `channels`, or after `ms`; never rejects. */
  until(channels: readonly string[], ms: number): Promise<void> {
    return new Promise((resolve) => {
      const stops: (() => void)[] = [];
      const done = () => {
        clearTimeout(timer);
        for (const stop of stops) stop();
        resolve();
      };
      const timer = setTimeout(done, ms);
      for (const channel of channels) stops.push(this.listen(channel, done));
    });
  }

  listenersOf(channel: string): number {
    return this.wakers.get(channel)?.size ?? 0;
  }

  /** Publishes a nudge; never fails the caller (a lost nudge costs listeners only the wait for their next look). */
  publish(topic: string, event: unknown, what: string): void {
    this.transport.publish(topic, event).catch((err: unknown) => {
      this.log.warn({ err, topic }, `${what} could not be published; listeners see it at their next look`);
    });
  }

  async stop(): Promise<void> {
    const unsubscribes = this.unsubscribes.splice(0);
    this.subscribing = undefined;
    await Promise.allSettled(unsubscribes.map((u) => u()));
    this.wakers.clear();
  }

  private wake(channel: string): void {
    const set = this.wakers.get(channel);
    if (!set) return;
    for (const wake of [...set]) {
      try {
        wake();
      } catch (err) {
        this.log.warn({ err, channel }, 'a nudge listener failed');
      }
    }
  }
}
