import type { Socket } from 'node:net';
import type { ChannelModel } from 'amqplib';
import { coalesceSocketWrites, isSocket } from '../../ops/kernel/coalesce-socket-writes.js';

/**
 * amqplib writes every frame group (a publish, an ack, a reply) to the socket separately, and with TCP_NODELAY on
 * (decision 0003: Nagle cost ~40 ms per sequential ask) each would be its own segment and its own read in the broker:
 * the writes of one tick go as one `writev` (ops/kernel/coalesce-socket-writes.ts). ops/bench/cluster.ts measures the
 * effect (G4).
 */
export function coalesceBrokerWrites(model: ChannelModel): void {
  // An amqplib internal we rely on changed when this is not a socket: plain writes then.
  coalesceSocketWrites(brokerSocket(model));
}

/** amqplib keeps the broker's socket at `connection.stream`, which its types leave out. */
export function brokerSocket(model: ChannelModel): Socket | undefined {
  const stream = 'stream' in model.connection ? model.connection.stream : undefined;
  return isSocket(stream) ? stream : undefined;
}
