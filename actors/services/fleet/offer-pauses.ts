/**
 * What one node's worker streams must not push offers to (decision 0079): the paused project queues and paused
 * workers of each org that has workers connected here, read from storage and kept per org.
 *
 * The poll reads the pauses in its own query and is always right; this copy only spares the push path a query per
 * offer. It is read again when a `pausesChanged` signal says a pause changed, and whenever it is older than
 * `maxAgeMs` when used (so a lost signal costs at most that long). Everything an org's streams are sent runs in
 * order through `run`: while the org's pauses are being read, what arrives waits behind the read, so an offer
 * announced after a pause is never judged by the pauses from before it. When the pauses cannot be read, `run` hands
 * `undefined`: the caller then asks the workers to poll rather than pushing an offer it cannot judge.
 */
export interface OrgPauses {
  readonly projects: ReadonlySet<string>;
  readonly workers: ReadonlySet<string>;
  /**
   * Projects with a concurrency setting (decision 0081): a keyed session of theirs is not pushed, since only the
   * poll's query counts the places its key holds. Read and refreshed with the pauses, and changed like them.
   */
  readonly limitedProjects?: ReadonlySet<string>;
}

export type LoadPauses = (orgId: string) => Promise<OrgPauses>;

interface OrgEntry {
  pauses: OrgPauses | undefined;
  readAt: number;
  /** Set while a read is in flight: what arrives meanwhile waits here, in order. */
  waiting: Array<(pauses: OrgPauses | undefined) => void> | undefined;
  /** A change was announced while a read was in flight: read once more after it. */
  readAgain: boolean;
}

export const PAUSES_MAX_AGE_MS = 15_000;

export class OfferPauses {
  private readonly byOrg = new Map<string, OrgEntry>();

  constructor(
    private readonly load: LoadPauses,
    /** Told of a read or a delivery that failed; must not throw. */
    private readonly onError: (orgId: string, err: unknown) => void,
    private readonly now: () => number = Date.now,
    private readonly maxAgeMs = PAUSES_MAX_AGE_MS,
  ) {}

  /** Runs `deliver` with the org's pauses: at once when they are known and fresh, else after they are read. */
  run(orgId: string, deliver: (pauses: OrgPauses | undefined) => void): void {
    const entry = this.entry(orgId);
    if (entry.waiting !== undefined) {
      entry.waiting.push(deliver);
      return;
    }
    if (entry.pauses !== undefined && this.now() - entry.readAt <= this.maxAgeMs) {
      deliver(entry.pauses);
      return;
    }
    entry.waiting = [deliver];
    this.read(orgId, entry);
  }

  /** A pause of the org changed: what is delivered from now on waits for the pauses as they are now. */
  changed(orgId: string): void {
    const entry = this.byOrg.get(orgId);
    if (entry === undefined) return; // read on first use
    if (entry.waiting !== undefined) {
      entry.readAgain = true;
      return;
    }
    entry.waiting = [];
    this.read(orgId, entry);
  }

  /** Reads the org's pauses ahead of its first offer (a worker of the org connected here). */
  prefetch(orgId: string): void {
    const entry = this.entry(orgId);
    if (entry.pauses !== undefined || entry.waiting !== undefined) return;
    entry.waiting = [];
    this.read(orgId, entry);
  }

  /** No worker of the org is connected here any more. */
  forget(orgId: string): void {
    const entry = this.byOrg.get(orgId);
    if (entry !== undefined && entry.waiting === undefined) this.byOrg.delete(orgId);
  }

  private entry(orgId: string): OrgEntry {
    let entry = this.byOrg.get(orgId);
    if (entry === undefined) this.byOrg.set(orgId, (entry = { pauses: undefined, readAt: 0, waiting: undefined, readAgain: false }));
    return entry;
  }

  private read(orgId: string, entry: OrgEntry): void {
    entry.readAgain = false;
    const startedAt = this.now();
    this.load(orgId).then(
      (pauses) => { entry.pauses = pauses; entry.readAt = startedAt; },
      (err: unknown) => { entry.pauses = undefined; entry.readAt = 0; this.onError(orgId, err); },
    ).finally(() => {
      if (entry.readAgain) {
        this.read(orgId, entry);
        return;
      }
      const waiting = entry.waiting ?? [];
      entry.waiting = undefined;
      for (const deliver of waiting) {
        try {
          deliver(entry.pauses);
        } catch (err) {
          this.onError(orgId, err); // one failed delivery must not strand those queued behind it
        }
      }
    });
  }
}
