import type { Deps } from '../../actors/services/deps.js';
import type { ClusterStatus } from '../../transport/cluster/index.js';
import type { Route } from '../types.js';

const shardList = { type: 'array', items: { type: 'integer', minimum: 0 } };

const clusterStatusSchema = {
  type: 'object',
  required: ['nodeId', 'shardCount', 'nodes', 'unclaimed', 'queueDepth'],
  properties: {
    nodeId: { type: 'string' },
    shardCount: { type: 'integer', minimum: 1 },
    nodes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['nodeId', 'url', 'self', 'lastSeenMsAgo', 'owned', 'consuming', 'target'],
        properties: {
          nodeId: { type: 'string' },
          url: { type: ['string', 'null'] },
          self: { type: 'boolean' },
          lastSeenMsAgo: { type: 'integer', minimum: 0 },
          owned: shardList,
          consuming: shardList,
          target: shardList,
        },
      },
    },
    unclaimed: shardList,
    queueDepth: { type: ['object', 'null'], additionalProperties: { type: 'integer', minimum: 0 } },
  },
};

/** A node without a broker is a cluster of one that holds every shard in-process. */
function singleNode(deps: Deps): ClusterStatus {
  const all = Array.from({ length: deps.config.shardCount }, (_, shard) => shard);
  return {
    nodeId: deps.config.nodeId,
    shardCount: deps.config.shardCount,
    nodes: [{ nodeId: deps.config.nodeId, url: null, self: true, lastSeenMsAgo: 0, owned: all, consuming: all, target: all }],
    unclaimed: [],
    queueDepth: null,
  };
}

/** Operators' map of the cluster as this node sees it (decision 0010): live members and the shards each holds. */
export function clusterRoutes(): Route<Deps>[] {
  return [
    {
      method: 'get', path: '/api/admin/cluster', auth: 'admin', tags: ['operations'],
      summary: 'Live cluster members as this node hears them, the shards each holds, consumes and should hold, and shard queue depths',
      responseSchema: clusterStatusSchema,
      handler: async (_req, deps) => ({ body: deps.services.cluster?.status() ?? singleNode(deps) }),
    },
  ];
}
