import type { Deps } from './deps.js';
import type { NodeService } from './node-service.js';

/**
 * A node service that runs one pass over durable work every `everyMs`, never two at once on a node (a pass still
 * running when the next tick comes is left to finish), and whose stop waits for the pass in flight. The outboxes are
 * made of it: what they owe is in storage, so a missed or failed pass is only late.
 */
export class PeriodicPass implements NodeService {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    readonly name: string,
    private readonly pass: (deps: Deps) => Promise<unknown>,
    private readonly everyMs: (deps: Deps) => number,
  ) {}

  start(deps: Deps): void {
    this.timer = setInterval(() => {
      this.running ??= this.pass(deps)
        .then(() => undefined, (err: unknown) => deps.log.warn({ err }, `${this.name} pass failed`))
        .finally(() => { this.running = undefined; });
    }, this.everyMs(deps));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
