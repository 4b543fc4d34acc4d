import { createHash } from 'node:crypto';

/** Recently placed addresses; a hash per ask showed in the broker path's allocation profile (ops/bench/cluster.ts). */
const recent = new Map<string, number>();
const RECENT_LIMIT = 10_000;

/** Address → shard. Stable across nodes and restarts: a cluster's shard count never changes while it runs. */
export function shardOf(address: string, shardCount: number): number {
  let word = recent.get(address);
  if (word === undefined) {
    word = createHash('sha256').update(address).digest().readUInt32BE(0);
    // Cleared wholesale when full: a miss costs one hash, and a bound keeps hostile address churn from growing it.
    if (recent.size >= RECENT_LIMIT) recent.clear();
    recent.set(address, word);
  }
  return word % shardCount;
}

export function addressOf(kind: string, id: string): string {
  return `${kind}/${id}`;
}

export function parseAddress(address: string): { kind: string; id: string } {
  const slash = address.indexOf('/');
  if (slash <= 0 || slash === address.length - 1) throw new Error(`malformed actor address: ${address}`);
  return { kind: address.slice(0, slash), id: address.slice(slash + 1) };
}
