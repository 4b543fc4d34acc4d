import type { ChannelModel } from 'amqplib';
import { coalesceSocketWrites } from '../../ops/kernel/coalesce-socket-writes.js';

/**
 * amqplib writes every frame group (a publish, an ack, a reply) to the socket separately, and with TCP_NODELAY on
 * (decision 0003: Nagle cost ~40 ms per sequential ask) each would be its own segment and its own read in the broker:
 * the writes of one tick go as one `writev` (ops/kernel/coalesce-socket-writes.ts). ops/bench/cluster.ts measures the
 * effect (G4).
 */
export function coalesceBrokerWrites(model: ChannelModel): void {
  // An amqplib internal we rely on changed when this is not a socket: plain writes then.
  coalesceSocketWrites((model.connection as unknown as { stream?: unknown }).stream);
}
