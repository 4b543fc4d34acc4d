import type { Logger } from '../ops/kernel/logger.js';
import { ChurnSet } from '../ops/kernel/churn-map.js';
import type { Exchange } from './exchange.js';
import { InFlightList } from './in-flight.js';
import type { UwsSseStream } from './sse.js';

/**
 * What one server's requests, its event streams and its shutdown share: whether it drains, the requests it has
 * taken in and not finished, and the event streams it holds open. Everything else a request needs is read-only.
 */
export class ServerState {
  /** Set once `close` begins: requests get 503 and a stream that opens after that is closed at once. */
  draining = false;
  readonly inFlight = new InFlightList<Exchange>();
  readonly streams = new ChurnSet<UwsSseStream>();
  private readonly idleWaiters: Array<() => void> = [];

  /** The exchange is answered (or its client gone): it no longer holds up a drain. */
  finished(exchange: Exchange): void {
    this.inFlight.delete(exchange);
    if (this.inFlight.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /**
   * Ends the open event streams, waits up to `graceMs` for the requests in flight to be answered, then drops whatever
   * is left. Call with `draining` set, so nothing new joins meanwhile.
   */
  async drain(graceMs: number, log: Logger): Promise<void> {
    for (const stream of [...this.streams]) stream.close();
    if (this.inFlight.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (this.inFlight.size > 0) log.warn({ abandoned: this.inFlight.size }, 'shutdown grace ran out with requests unanswered');
    for (const exchange of this.inFlight.toArray()) exchange.abandon();
  }
}
