import type { Socket } from 'node:net';

/**
 * Client libraries write each command or frame group to their socket separately, and with TCP_NODELAY on each becomes
 * its own segment, its own syscall here and its own read at the server. Corking the socket at the first write of a
 * tick and uncorking on the next microtask turn sends everything written in that tick as one `writev`: the same
 * bytes, no added delay (nothing waits for a timer or a peer's ACK), fewer packets for the server to read.
 * Answers false, and changes nothing, when `socket` is not a socket (a library internal we rely on changed).
 */
export function coalesceSocketWrites(socket: unknown): boolean {
  if (!isSocket(socket)) return false;
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
  return true;
}

export function isSocket(value: unknown): value is Socket {
  return typeof value === 'object' && value !== null && typeof (value as Socket).cork === 'function' && typeof (value as Socket).uncork === 'function';
}
