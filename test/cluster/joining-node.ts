import { shardRoles } from '../../transport/cluster/index.js';

/**
 * The shards rendezvous placement makes `nodeId` primary of among `members` (which should include it).
 */
export function primaryShardsOf(nodeId: string, members: readonly string[], shardCount: number): number[] {
  return shardRoles(shardCount, members).flatMap((role, shard) => (role.primary === nodeId ? [shard] : []));
}

/**
 * A node id, `<stem>-<label>` or `<stem><n>-<label>`, that rendezvous placement makes primary of at least one shard
 * once it joins `members`. Placement can leave a node with no shard at all. With 16 shards and three nodes a name
 * misses about once in 660; with 8 shards, once in 26. A test that shows a joining node taking its share names its
 * node with this.
 */
export function joiningNodeId(stem: string, label: string, members: readonly string[], shardCount: number): string {
  for (let i = 0; ; i += 1) {
    const id = `${stem}${i === 0 ? '' : i}-${label}`;
    if (primaryShardsOf(id, [...members, id], shardCount).length > 0) return id;
  }
}
