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

/** The roles of the last membership asked about: membership changes seldom, and the balancer asks twice a second. */
let lastRoles: { readonly key: string; readonly roles: readonly ShardRole[] } | undefined;

/**
 * Primary and backup per shard. The ranking is a pure function of the shard count and the set of node ids, so the
 * last answer is reused while neither changes: computing it is a SHA-256 per shard and node, which the balancer's
 * tick every 500 ms and the status page paid each time (5 % of a node's CPU under the lifecycle bench on RabbitMQ,
 * decision 0057).
 */
export function shardRoles(shardCount: number, nodeIds: Iterable<string>): readonly ShardRole[] {
  const nodes = [...new Set(nodeIds)];
  // Node ids never contain NUL (ops/config.ts TROUPE_NODE_ID), so the key names exactly one set.
  const key = `${shardCount}\u0000${[...nodes].sort().join('\u0000')}`;
  if (lastRoles?.key === key) return lastRoles.roles;
  const roles = Object.freeze(Array.from({ length: shardCount }, (_, shard) => {
    const [primary, backup] = rankNodes(shard, nodes);
    return Object.freeze({ primary, backup });
  }));
  lastRoles = { key, roles };
  return roles;
}

function weightOf(shard: number, nodeId: string): bigint {
  return createHash('sha256').update(`${shard}\u0000${nodeId}`).digest().readBigUInt64BE(0);
}
