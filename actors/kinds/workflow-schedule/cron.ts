import { Cron } from 'croner';

/**
 * Cron arithmetic for schedule triggers, through croner (decision 0027): standard 5-field expressions, or 6 with a
 * leading seconds field, in an IANA time zone, with the usual day-of-month OR day-of-week rule of Vixie cron.
 * Pure functions of the expression, the zone and an instant, so the schedule machine may call them in `decide`.
 */
export class CronSchedule {
  private readonly cron: Cron;

  /** Throws when the expression or the zone is not one croner accepts. */
  constructor(expression: string, timezone: string) {
    this.cron = new Cron(expression, { mode: '5-or-6-parts', timezone, paused: true });
  }

  /** The first fire strictly after `afterMs`, or null when the expression never fires again. */
  nextAfter(afterMs: number): number | null {
    return this.cron.nextRun(new Date(afterMs))?.getTime() ?? null;
  }

  /** The next `count` fires strictly after `afterMs`. */
  nextFires(afterMs: number, count: number): number[] {
    return this.cron.nextRuns(count, new Date(afterMs)).map((d) => d.getTime());
  }

  /**
   * The shortest gap between two fires among the first `sample` after `afterMs`, in ms (Infinity for fewer than two).
   * Cron fields repeat within a year, and every pattern this can meet repeats within far fewer fires than the sample.
   */
  shortestInterval(afterMs: number, sample = 64): number {
    const fires = this.nextFires(afterMs, sample);
    let shortest = Infinity;
    for (let i = 1; i < fires.length; i++) shortest = Math.min(shortest, fires[i]! - fires[i - 1]!);
    return shortest;
  }

  /** The last fire at or before `atMs`, or null when there was none. */
  latestAtOrBefore(atMs: number): number | null {
    return this.cron.previousRuns(1, new Date(atMs + 1))[0]?.getTime() ?? null;
  }
}
