import type { Deps } from '../deps.js';
import type { NodeService } from '../node-service.js';
import { expiredTranscripts, purgeTranscriptBatch } from '../../../storage/sessions/transcript-retention.js';

/**
 * Deletes transcripts older than their org's retention (issue 35 §1, `PUT /api/org/{orgId}/settings
 * {transcriptRetentionDays}`), in small batches: a pass takes at most `TRANSCRIPTS_PER_PASS` transcripts and deletes
 * at most `ENTRIES_PER_BATCH` entries per statement, `BATCHES_PER_PASS` statements in all, so a pass never holds the
 * database for long; the next pass continues where it stopped. Every node sweeps: deleting a range twice deletes
 * nothing more, so nodes need not agree on who sweeps. The 64 KiB tail of a session's output (its detail) is not
 * the transcript and stays.
 */
export const SWEEP_INTERVAL_MS = 60_000;
export const TRANSCRIPTS_PER_PASS = 20;
export const ENTRIES_PER_BATCH = 1000;
export const BATCHES_PER_PASS = 50;

export class TranscriptRetentionSweeper implements NodeService {
  readonly name = 'transcript-retention';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly intervalMs = SWEEP_INTERVAL_MS) {}

  start(deps: Deps): void {
    this.timer = setInterval(() => {
      this.running ??= sweepTranscripts(deps)
        .then(() => undefined, (err: unknown) => deps.log.warn({ err }, 'transcript retention sweep failed'))
        .finally(() => { this.running = undefined; });
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}

/** One pass; returns how many entries it deleted. Exported for tests and operators. */
export async function sweepTranscripts(
  deps: Pick<Deps, 'db' | 'clock'>, limits = { transcripts: TRANSCRIPTS_PER_PASS, batch: ENTRIES_PER_BATCH, batches: BATCHES_PER_PASS },
): Promise<number> {
  const expired = await expiredTranscripts(deps.db, new Date(deps.clock.now()), limits.transcripts);
  let deleted = 0;
  let batches = 0;
  for (const t of expired) {
    let purged = t.purgedSeq;
    while (purged < t.lastSeq && batches < limits.batches) {
      deleted += await purgeTranscriptBatch(deps.db, { ...t, purgedSeq: purged }, limits.batch);
      purged = Math.min(t.lastSeq, purged + limits.batch);
      batches += 1;
    }
    if (batches >= limits.batches) break;
  }
  return deleted;
}
