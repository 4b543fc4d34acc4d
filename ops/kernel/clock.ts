/** Time is injected everywhere a decision depends on it, so tests drive expiry and leases with fake timers. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
