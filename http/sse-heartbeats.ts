/** What the wheel keeps: a stream that can send its keep-alive comment, and which slot it sits in. */
export interface Beating {
  beat(): void;
  heartbeatSlot: number;
}

const SLOTS = 15;

/**
 * Keep-alive comments for every open stream of a node from one timer. A timer per stream cost its Timeout object
 * and closure for as long as the stream lived (10,000 streams, PERFORMANCE.md G6, against a budget of 4 KB each).
 * Streams are dealt round-robin into SLOTS slots and the timer visits one slot per `periodMs / SLOTS`, so each
 * stream still hears from us once a period and the node never writes to all of them in the same tick. A stream's
 * first comment comes within one period of joining, not exactly one period after.
 */
export class HeartbeatWheel {
  private readonly slots: Array<Set<Beating>> = Array.from({ length: SLOTS }, () => new Set());
  private nextSlot = 0;
  private cursor = 0;
  private members = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly periodMs: number) {}

  add(stream: Beating): void {
    stream.heartbeatSlot = this.nextSlot;
    this.nextSlot = (this.nextSlot + 1) % SLOTS;
    this.slots[stream.heartbeatSlot]!.add(stream);
    if (++this.members === 1) {
      this.timer = setInterval(() => this.turn(), Math.max(1, Math.floor(this.periodMs / SLOTS)));
      this.timer.unref();
    }
  }

  remove(stream: Beating): void {
    if (!this.slots[stream.heartbeatSlot]!.delete(stream)) return;
    if (--this.members === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private turn(): void {
    const slot = this.slots[this.cursor]!;
    this.cursor = (this.cursor + 1) % SLOTS;
    for (const stream of slot) stream.beat();
  }
}
