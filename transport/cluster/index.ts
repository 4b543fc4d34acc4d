export { Cluster, type ClusterOptions, type ClusterStatus, type ClusterNodeStatus } from './cluster.js';
export { planShards, ShardBalancer, type ShardAction } from './balancer.js';
export { Presence, parseHeartbeat, type Member } from './presence.js';
export { rankNodes, shardRoles } from './rendezvous.js';
export { managementUrlFor, vhostOf, readBrokerView } from './broker-view.js';
