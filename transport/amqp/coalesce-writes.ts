import type { Socket } from 'node:net';
import type { ChannelModel } from 'amqplib';

/**
 * amqplib writes every frame group (a publish, an ack, a reply) to the socket separately, and with TCP_NODELAY on
 * (decision 0003: Nagle cost ~40 ms per sequential ask) each becomes its own segment, its own syscall here and its
 * own read in the broker. Corking the socket at the first write of a tick and uncorking on the next microtask turn
 * sends everything written in that tick as one `writev`: the same bytes, no added delay (nothing waits for a timer
 * or a peer's ACK), far fewer packets for the broker to read. ops/bench/cluster.ts measures the effect (G4).
 */
export function coalesceSocketWrites(model: ChannelModel): void {
  const socket = (model.connection as unknown as { stream?: unknown }).stream;
  if (!isSocket(socket)) return; // an amqplib internal we rely on changed: fall back to plain writes
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = ((...args: unknown[]) => {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write(...args);
  }) as Socket['write'];
}

function isSocket(value: unknown): value is Socket {
  return typeof value === 'object' && value !== null && typeof (value as Socket).cork === 'function' && typeof (value as Socket).uncork === 'function';
}
