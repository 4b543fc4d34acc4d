import { createHash } from 'node:crypto';

/**
 * Rendezvous (highest-random-weight) hashing of shards over live node ids. Every node computes the same ranking
 * from the same membership, without talking to the others, and a membership change moves only the shards whose
 * top-ranked node joined or left: when a node dies, each of its shards' new first choice is its old second
 * choice, which is already consuming it as a standby (ops/decisions/0010-cluster-placement.md).
 */
export function rankNodes(shard: number, nodeIds: Iterable<string>): string[] {
  return [...new Set(nodeIds)]
    .map((nodeId) => ({ nodeId, weight: weightOf(shard, nodeId) }))
    .sort((a, b) => (a.weight < b.weight ? 1 : a.weight > b.weight ? -1 : a.nodeId < b.nodeId ? -1 : 1))
    .map((ranked) => ranked.nodeId);
}

export interface ShardRole {
  /** The node that should hold the shard: first in the ranking. */
  readonly primary: string | undefined;
  /** The node that consumes the shard as a standby and takes it over at once if the primary dies. */
  readonly backup: string | undefined;
}

export function shardRoles(shardCount: number, nodeIds: Iterable<string>): ShardRole[] {
  const nodes = [...new Set(nodeIds)];
  return Array.from({ length: shardCount }, (_, shard) => {
    const [primary, backup] = rankNodes(shard, nodes);
    return { primary, backup };
  });
}

function weightOf(shard: number, nodeId: string): bigint {
  return createHash('sha256').update(`${shard}\u0000${nodeId}`).digest().readBigUInt64BE(0);
}
