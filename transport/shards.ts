import { createHash } from 'node:crypto';

/** Address → shard. Stable across nodes and restarts: a cluster's shard count never changes while it runs. */
export function shardOf(address: string, shardCount: number): number {
  const digest = createHash('sha256').update(address).digest();
  return digest.readUInt32BE(0) % shardCount;
}

export function addressOf(kind: string, id: string): string {
  return `${kind}/${id}`;
}

export function parseAddress(address: string): { kind: string; id: string } {
  const slash = address.indexOf('/');
  if (slash <= 0 || slash === address.length - 1) throw new Error(`malformed actor address: ${address}`);
  return { kind: address.slice(0, slash), id: address.slice(slash + 1) };
}
