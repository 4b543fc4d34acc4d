import type { Channel } from 'amqplib';

/**
 * Notices a broker that stopped answering while its TCP connection stays open (a frozen process, a hung VM, a
 * link that went silent). AMQP heartbeats notice too, but only after two missed intervals plus the time the
 * socket's writes take to back up: ~20-24 s at the 10 s heartbeat the cluster's failover relies on (issue 20
 * measured 24 s of writes answered as if nothing happened). Every `intervalMs` the probe asks the broker a trivial
 * question on a channel of its own (does `amq.direct` exist: one frame each way, no state); no answer within
 * `timeoutMs` calls `onHung` once. A busy broker answers this in milliseconds; only one that has stopped does not.
 */
export interface BrokerLivenessOptions {
  /** @default 1000 */
  readonly intervalMs?: number;
  /** @default 4000 */
  readonly timeoutMs?: number;
}

export const DEFAULT_PROBE_INTERVAL_MS = 1_000;
export const DEFAULT_PROBE_TIMEOUT_MS = 4_000;

export class BrokerLivenessProbe {
  private timer: NodeJS.Timeout | undefined;
  private outstanding: { since: number } | undefined;
  private stopped = false;

  constructor(
    private readonly channel: Channel,
    private readonly onHung: (silentForMs: number) => void,
    private readonly options: BrokerLivenessOptions = {},
  ) {}

  start(): void {
    const interval = this.options.intervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
    this.timer = setInterval(() => this.tick(), interval);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    const now = Date.now();
    const timeout = this.options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
    if (this.outstanding) {
      // Still waiting on the last question: the broker is silent once it has been for longer than the timeout.
      const silent = now - this.outstanding.since;
      if (silent < timeout) return;
      // After a long pause of this process the answer may be in the socket unread: let I/O run once, then decide.
      const waited = this.outstanding;
      setImmediate(() => {
        if (this.stopped || this.outstanding !== waited) return;
        this.stop();
        this.onHung(Date.now() - waited.since);
      });
      return;
    }
    const asked = { since: now };
    this.outstanding = asked;
    this.channel.checkExchange('amq.direct').then(
      () => { if (this.outstanding === asked) this.outstanding = undefined; },
      // A channel that fails is the connection's business (its close handler recycles it), not a hang.
      () => { if (this.outstanding === asked) this.outstanding = undefined; },
    );
  }
}
