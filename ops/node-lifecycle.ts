import { performance } from 'node:perf_hooks';
import type { Logger } from './kernel/logger.js';

/**
 * Where the start's time goes, logged with "troupe node ready" (decision 0051): each phase's milliseconds, and
 * `modules`, from the process's own start to the node's, module loading included.
 */
export class StartPhases {
  readonly phases: Record<string, number> = {};
  private phaseStart = performance.now();

  constructor() {
    this.phases.modules = Math.round(this.phaseStart);
  }

  done(name: string): void {
    const now = performance.now();
    this.phases[name] = Math.round(now - this.phaseStart);
    this.phaseStart = now;
  }
}

/**
 * What the node has opened, closed in the reverse order on the way down: each part is pushed once it is started,
 * so a start that fails half-way closes exactly what it had opened. A part that fails to close is logged, and the
 * ones below it still close.
 */
export class Closers {
  private readonly closers: Array<() => Promise<void>> = [];

  constructor(private readonly log: Logger) {}

  push(close: () => Promise<void>): void {
    this.closers.push(close);
  }

  async closeAll(): Promise<void> {
    for (const close of this.closers.splice(0).reverse()) {
      await close().catch((err: unknown) => this.log.warn({ err }, 'error while closing'));
    }
  }
}
