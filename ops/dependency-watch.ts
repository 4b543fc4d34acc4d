import { Gauge, type Registry } from 'prom-client';
import type { Logger } from './kernel/logger.js';
import { runProbes, type ReadinessProbes } from '../http/routes/health.js';

/** The dependencies an operator watches, and what each one is on this node (`postgres`, `redis`, `amqp`, …). */
export type DependencyEngines = Readonly<Record<'storage' | 'transport' | 'cache', string>>;
export type DependencyState = Record<string, 'up' | 'down'>;

/** Often enough that a dashboard sees an outage within a scrape or two; each probe is one cheap round trip. */
const DEFAULT_INTERVAL_MS = 5_000;

/**
 * Probes storage, transport and cache on a timer (the same probes as /readyz), keeps `troupe_up{dependency,engine}`
 * at 1 or 0, and logs each change: a warning when a dependency becomes unreachable, info when it is back. The
 * first round runs before the node says it is ready, so the start log names what is down (issue 20).
 */
export class DependencyWatch {
  private readonly up: Gauge<'dependency' | 'engine'>;
  private readonly last = new Map<string, boolean>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<DependencyState> | undefined;

  constructor(
    private readonly probes: ReadinessProbes,
    private readonly engines: DependencyEngines,
    private readonly log: Logger,
    metrics: Registry,
    private readonly intervalMs = DEFAULT_INTERVAL_MS,
  ) {
    this.up = new Gauge({
      name: 'troupe_up',
      help: 'Whether this node reaches the dependency (1) or not (0), probed every few seconds',
      labelNames: ['dependency', 'engine'],
      registers: [metrics],
    });
  }

  /** First round (awaited), then one round per interval until `stop`. */
  async start(): Promise<DependencyState> {
    const state = await this.check();
    this.timer = setInterval(() => void this.check(), this.intervalMs);
    this.timer.unref();
    return state;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One round; overlapping calls share the round in flight. */
  check(): Promise<DependencyState> {
    this.running ??= this.round().finally(() => (this.running = undefined));
    return this.running;
  }

  private async round(): Promise<DependencyState> {
    const checks = await runProbes(this.probes);
    const state: DependencyState = {};
    for (const [dependency, reachable] of Object.entries(checks)) {
      const engine = this.engines[dependency as keyof DependencyEngines] ?? dependency;
      state[dependency] = reachable ? 'up' : 'down';
      this.up.set({ dependency, engine }, reachable ? 1 : 0);
      const before = this.last.get(dependency);
      this.last.set(dependency, reachable);
      if (before === reachable) continue;
      if (!reachable) this.log.warn({ dependency, engine }, `${dependency} (${engine}) is unreachable: requests that need it answer 503 until it is back`);
      else if (before === false) this.log.info({ dependency, engine }, `${dependency} (${engine}) is reachable again`);
    }
    return state;
  }
}
