import type { Logger } from '../ops/kernel/logger.js';
import type { DeadLetterBox, DeadLetterOutcome, DeadLetterPage, DeadLetterSelection, DeadLetter } from './port.js';
import { SelectionTracker, describeDeadLetter } from './dead-letter-view.js';
import { encodeEnvelope, type Envelope } from './envelope.js';

/** The in-process transport's dead letters: a bounded list in this node's memory, gone when the node stops. */
export const DEFAULT_LOCAL_DEAD_LETTER_BOUND = 1_000;

interface Kept {
  readonly letter: DeadLetter;
  readonly envelope: Envelope;
}

/**
 * The same contract as the broker's dead-letter queue, for a node on its embedded defaults: messages whose handler
 * crashed on every delivery up to the limit, oldest first, until replayed or purged. Past the bound there is no
 * shard queue to keep a refused one in (the broker's at-least-once), so it is dropped, logged and counted.
 */
export class LocalDeadLetters implements DeadLetterBox {
  private readonly kept: Kept[] = [];
  private overflowed = 0;

  constructor(
    private readonly bound: number,
    /** Sends a replayed message: the transport's own tell. */
    private readonly tell: (address: string, message: unknown) => Promise<void>,
    private readonly log: Logger,
  ) {}

  add(envelope: Envelope, reason: string): void {
    if (this.kept.length >= this.bound) {
      this.overflowed += 1;
      this.log.error({ address: envelope.to, messageId: envelope.id, bound: this.bound }, 'dead-letter list full; this dead letter is dropped');
      return;
    }
    const { letter } = describeDeadLetter(encodeEnvelope(envelope), { messageId: envelope.id, reason, at: new Date() });
    this.kept.push({ letter, envelope });
  }

  async list(limit: number): Promise<DeadLetterPage> {
    return {
      items: this.kept.slice(0, limit).map((k) => k.letter),
      total: this.kept.length, bound: this.bound, strategy: 'in-process', overflowed: this.overflowed,
    };
  }

  async replay(selection: DeadLetterSelection): Promise<DeadLetterOutcome> {
    const tracker = new SelectionTracker(selection);
    const done: string[] = [];
    for (const kept of this.kept.filter((k) => tracker.takes(k.letter.id))) {
      // Taken off first: if it crashes again it comes back as a new dead letter, not twice in the list.
      this.kept.splice(this.kept.indexOf(kept), 1);
      await this.tell(kept.envelope.to, kept.envelope.payload);
      done.push(kept.letter.id);
    }
    return { done, notFound: tracker.notFound(), unreadable: [] };
  }

  async purge(selection: DeadLetterSelection): Promise<DeadLetterOutcome> {
    const tracker = new SelectionTracker(selection);
    const done = this.kept.filter((k) => tracker.takes(k.letter.id));
    for (const kept of done) this.kept.splice(this.kept.indexOf(kept), 1);
    return { done: done.map((k) => k.letter.id), notFound: tracker.notFound(), unreadable: [] };
  }
}
