import type { Knex } from 'knex';
import type { Logger } from '../../../ops/kernel/logger.js';
import type { NodeService } from '../node-service.js';
import type { AuditInput } from '../../../storage/audit-log.js';
import { drainAuditOutbox, recordAuditLater } from '../../../storage/audit-outbox.js';

/** A crash's leftovers and another node's entries are picked up within this; a node's own go at once. */
const SWEEP_EVERY_MS = 2_000;
/** Entries moved per drain transaction. */
const DRAIN_BATCH = 500;
/** At shutdown, rounds of draining before what is left is left to the next node that starts. */
const FINAL_ROUNDS = 10;

/**
 * Audit entries recorded off the request path (decision 0041). `record` makes an entry durable in the outbox
 * before the caller answers; the drain moves it into the org's hash chain moments later (right away for this
 * node's own entries, every two seconds for anything else, and once more at shutdown), so neither a crash nor a
 * slow chain lock loses or delays a reply.
 */
export class AuditOutbox implements NodeService {
  readonly name = 'audit-outbox';
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly db: Knex, private readonly log: Logger) {}

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.kick(), SWEEP_EVERY_MS);
    this.timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.draining;
    for (let round = 0; round < FINAL_ROUNDS; round++) {
      const moved = await drainAuditOutbox(this.db).catch((err: unknown) => {
        this.log.warn({ err }, 'audit outbox not drained at shutdown; the next node to start moves it');
        return 0;
      });
      if (moved === 0) return;
    }
  }

  /** Durable before it returns (pass the change's transaction to commit the entry with it); in the chain soon after. */
  async record(entry: AuditInput & { at: Date }, trx?: Knex.Transaction): Promise<void> {
    await recordAuditLater(trx ?? this.db, entry);
    if (trx) void trx.executionPromise.then(() => this.kick(), () => undefined);
    else this.kick();
  }

  /**
   * For an entry about a change already made: an outbox that cannot be written must not turn a done change into a
   * failed request, so the entry goes to the log at error level instead (spec 4.2, "deferred and non-fatal").
   */
  async recordOrLog(entry: AuditInput & { at: Date }): Promise<void> {
    await this.record(entry).catch((err: unknown) =>
      this.log.error({ err, audit: entry }, 'audit entry could not be recorded; it is in this log line only'));
  }

  /** Drains soon; overlapping kicks share one loop, which runs again if kicked meanwhile. */
  kick(): void {
    if (this.stopped && this.draining === undefined) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.loop().finally(() => (this.draining = undefined));
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        // A batch smaller than the limit was all there was (or all another node has not locked): asking again
        // would be a transaction that finds nothing, once per audited request (issue 19).
        while ((await drainAuditOutbox(this.db, DRAIN_BATCH)) === DRAIN_BATCH && !this.stopped);
      } catch (err) {
        this.log.warn({ err }, 'audit outbox drain failed; retried on the next sweep');
        return;
      }
    } while (this.again && !this.stopped);
  }
}
