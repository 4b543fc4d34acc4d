import { get } from './api.js';

/**
 * Reads started before the page that needs them is drawn: the console starts them while it boots, so the first
 * screen waits for one round trip, not for the boot's and then its own. Each is taken once, by the page it was
 * started for; a later visit to that page reads afresh.
 */
interface EarlyRead {
  readonly answer: Promise<unknown>;
  arrived: boolean;
  value: unknown;
}

const reads = new Map<string, EarlyRead>();

/** Starts reading `path`; settles (never rejects) when the answer or the refusal has come. */
export function readEarly(path: string): Promise<void> {
  const read: EarlyRead = { answer: get(path), arrived: false, value: undefined };
  reads.set(path, read);
  // A refusal is the page's to show when it takes the read; until then it is no unhandled rejection.
  return read.answer.then((value) => { read.arrived = true; read.value = value; }, () => undefined);
}

/** The early read of `path` when one was started and not yet taken, else a read now. */
export function take<T>(path: string): Promise<T> {
  const read = reads.get(path);
  reads.delete(path);
  return (read?.answer ?? get(path)) as Promise<T>;
}

/** The early read's answer when it has already arrived (taking it), so a page can draw it in its first render. */
export function takeArrived<T>(path: string): T | undefined {
  const read = reads.get(path);
  if (!read?.arrived) return undefined;
  reads.delete(path);
  return read.value as T;
}
