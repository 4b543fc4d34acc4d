import { Gauge, type Registry } from 'prom-client';
import type { DeadLetterBox, DeadLetterPage } from './port.js';

/**
 * The dead letters in `/metrics` (issue 20): how many are kept now (the cluster's dead-letter queue under RabbitMQ,
 * this node's list in-process), the bound past which they wait in their shard queue or, in-process, are dropped,
 * how many were dropped, and whether dead-lettering is at-least-once. Read from the box at each scrape, with the
 * same `list(0)` the operator's `troupe dead-letters list` makes: the broker alone knows the queue's depth.
 *
 * A scrape while the broker is unreachable, or slower than `timeoutMs`, keeps the last values: a gap in the series
 * would read as "no dead letters", and `troupe_transport_connected` already says the broker is away.
 */
export function watchDeadLetters(registry: Registry, box: DeadLetterBox, timeoutMs = 1_000): void {
  let last: DeadLetterPage | undefined;
  let reading: Promise<void> | undefined;
  // One read serves the four gauges of a scrape: prom-client collects them all at once, so they share the read under way.
  const read = () => (reading ??= refresh().finally(() => { reading = undefined; }));
  async function refresh(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      last = await Promise.race([
        box.list(0),
        new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('timeout')), timeoutMs); }),
      ]);
    } catch {
      // Kept as it was; see above.
    } finally {
      clearTimeout(timer);
    }
  }
  const gauge = (name: string, help: string, value: (page: DeadLetterPage) => number) =>
    new Gauge({
      name, help, registers: [registry],
      async collect() {
        await read();
        if (last !== undefined) this.set(value(last));
      },
    });
  gauge('troupe_dead_letters', 'Dead letters kept now: the cluster\'s dead-letter queue (RabbitMQ) or this node\'s list (in-process)', (p) => p.total);
  gauge('troupe_dead_letters_bound', 'The most dead letters kept; past it they wait in their shard queue (RabbitMQ) or are dropped (in-process)', (p) => p.bound);
  gauge('troupe_dead_letters_dropped', 'Dead letters dropped past the bound since this node started (in-process only; the broker keeps them)', (p) => p.overflowed);
  gauge('troupe_dead_letters_at_least_once', '1 when no dead letter can be lost on its way to the dead-letter queue (decision 0048), else 0', (p) => (p.strategy === 'at-least-once' ? 1 : 0));
}
