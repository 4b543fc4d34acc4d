import type { RunningSession } from './running-session.js';

/** The sessions this worker holds: those whose agent runs, and those whose claim is on the wire. */
export class SessionTable {
  readonly running = new Map<string, RunningSession>();
  readonly claiming = new Set<string>();

  constructor(private readonly capacity: number) {}

  /** How many more sessions it may take. */
  free(): number {
    return this.capacity - this.running.size - this.claiming.size;
  }

  /** The share of its capacity in use, as the heartbeat tells it. */
  load(): number {
    return this.running.size / Math.max(1, this.capacity);
  }

  /** Whether `s` is still the run the worker holds under its id (not one that finished). */
  holds(s: RunningSession): boolean {
    return this.running.get(s.id) === s;
  }

  stopAll(reason: string, reportOutcome: boolean): void {
    for (const s of this.running.values()) s.stopAgent(reason, reportOutcome);
  }
}
