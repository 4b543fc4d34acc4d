export { AmqpTransport, type AmqpTransportOptions, type ShardStatus } from './transport.js';
export { shardTopology, topologyNames, declareTopology, deleteTopology, type Topology, type TopologyNames } from './topology.js';
