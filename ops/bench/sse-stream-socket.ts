import net from 'node:net';

/**
 * The load side of the SSE bench (sse.ts): raw-socket clients, a GET written by hand and frames counted by their
 * `data: ` lines, since fetch would cost more than the servers being measured.
 */

const now = () => performance.timeOrigin + performance.now();

/** One raw-socket SSE client: counts frames (`data: ` lines) and remembers when the last one arrived. */
export class SseSocket {
  frames = 0;
  lastArrival = 0;
  closed = false;
  /** The frame count at which this stream has the probe event it is waiting for; 0 when not waiting. */
  waiting = 0;
  constructor(readonly socket: net.Socket, readonly group: number) {}
}

/**
 * The client reads with `onread` into one buffer shared by every socket: with 'data' events each read went through
 * Node's stream machinery and a fresh Buffer, ~20 µs a socket on this machine, so a probe to a group of 1,000 streams
 * measured mostly this process working through its own sockets (the ceiling's p99 read 42 to 83 ms).
 */
const sharedReadBuffer = Buffer.allocUnsafe(64 * 1024);
const DATA_LINE = Buffer.from('data: ');

/**
 * Opens stream `target`, resolving once the reply is a 200 and `openMarker` has arrived; from then on `onFrame` hears
 * of every read that brought frames. Rejects on any other reply, a close, or no opening within 60 s.
 */
export function openStream(port: number, target: string, token: string | undefined, group: number, onFrame: (s: SseSocket) => void, openMarker: string): Promise<SseSocket> {
  return new Promise((resolve, reject) => {
    let s: SseSocket;
    let head = '';
    let opened = false;
    const onRead = (nread: number, buf: Buffer): boolean => {
      if (!opened) {
        head += buf.toString('latin1', 0, nread);
        if (!head.startsWith('HTTP/1.1 200')) {
          if (head.includes('\r\n\r\n')) { clearTimeout(timer); socket.destroy(); reject(new Error(`stream ${target}: ${head.slice(0, 200)}`)); }
          return true;
        }
        if (!head.includes(openMarker)) return true;
        opened = true;
        head = '';
        clearTimeout(timer);
        resolve(s);
        return true;
      }
      const arrived = now();
      let n = 0;
      const chunk = buf.subarray(0, nread);
      for (let at = chunk.indexOf(DATA_LINE); at >= 0; at = chunk.indexOf(DATA_LINE, at + 6)) n++;
      if (n > 0) {
        s.frames += n;
        s.lastArrival = arrived;
        onFrame(s);
      }
      return true;
    };
    const socket = net.connect({ port, host: '127.0.0.1', onread: { buffer: sharedReadBuffer, callback: onRead } } as net.NetConnectOpts);
    s = new SseSocket(socket, group);
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`stream ${target} did not open in 60 s`)); }, 60_000);
    socket.setNoDelay(true);
    socket.on('connect', () => {
      socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n${token ? `Authorization: Bearer ${token}\r\n` : ''}\r\n`);
    });
    socket.on('error', () => {});
    socket.on('close', () => { s.closed = true; if (!opened) { clearTimeout(timer); reject(new Error(`stream ${target} closed before opening`)); } });
  });
}
