import net from 'node:net';
import { inBatches } from './in-batches.js';

/**
 * The reading side of the slow-readers drive (slow-readers.ts): subscribers of the interview stream on raw sockets,
 * some of which stop reading once the stream is open.
 */

const now = () => performance.timeOrigin + performance.now();

/** Called with each frame's delay (ms) and the time it was posted, which names the frame. */
export type OnDelay = (ms: number, sentAt: number) => void;

const MARKER = Buffer.from('"tokens":["');
const QUOTE = 0x22;

/**
 * One raw-socket subscriber. Each frame's first token is the time it was posted (this process's clock), so a reader
 * takes its delay from the frame itself. A marker cut between two chunks is found by searching the end of the
 * previous chunk again; a frame is counted when its closing quote arrives, so never twice.
 */
export class Subscriber {
  frames = 0;
  closed = false;
  opened = false;
  /** The stream's `x-request-id`, which the node's cut-off log line names. */
  requestId = '';
  private carry: Buffer = Buffer.alloc(0);
  constructor(readonly socket: net.Socket, readonly stalls: boolean, private readonly onDelay: OnDelay) {}

  read(chunk: Buffer): void {
    const at = now();
    // A frame cut between the previous chunk and this one: only the seam is searched again, never the whole chunk
    // copied (the clients read tens of MB/s on one core).
    if (this.carry.length > 0) {
      const seam = Buffer.concat([this.carry, chunk.subarray(0, 64)]);
      for (let i = seam.indexOf(MARKER); i >= 0 && i < this.carry.length; i = seam.indexOf(MARKER, i + 1)) this.count(seam, i, this.carry.length, at);
    }
    for (let i = chunk.indexOf(MARKER); i >= 0; i = chunk.indexOf(MARKER, i + MARKER.length)) this.count(chunk, i, 0, at);
    this.carry = chunk.subarray(Math.max(0, chunk.length - 64));
  }

  /** Counts the frame whose marker starts at `i` if its closing quote is at or after `from` (not counted before). */
  private count(text: Buffer, i: number, from: number, at: number): void {
    const start = i + MARKER.length;
    const end = text.indexOf(QUOTE, start);
    if (end < 0 || end < from) return;
    this.frames += 1;
    const sentAt = Number(text.toString('latin1', start, end));
    this.onDelay(at - sentAt, sentAt);
  }
}

/** Opens one subscriber, resolving once the stream has opened (`:ok`); a stalled one then stops reading. */
function subscribe(port: number, target: string, token: string, stalls: boolean, onDelay: OnDelay): Promise<Subscriber> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const s = new Subscriber(socket, stalls, onDelay);
    let head = '';
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`${target} did not open within 30 s`)); }, 30_000);
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\n\r\n`));
    socket.on('data', (chunk: Buffer) => {
      if (s.opened) return s.read(chunk);
      head += chunk.toString('latin1');
      if (!head.includes(':ok\n\n')) {
        if (head.includes('\r\n\r\n') && !head.startsWith('HTTP/1.1 200')) { clearTimeout(timer); socket.destroy(); reject(new Error(`${target}: ${head.slice(0, 300)}`)); }
        return;
      }
      s.opened = true;
      s.requestId = /x-request-id: ([^\r]+)/i.exec(head)?.[1] ?? '';
      clearTimeout(timer);
      // A stalled reader takes nothing more from here on: the kernel buffers fill, then the node's.
      if (stalls) socket.pause();
      resolve(s);
    });
    socket.on('error', () => {});
    socket.on('close', () => { s.closed = true; if (!s.opened) { clearTimeout(timer); reject(new Error(`${target} closed before opening`)); } });
  });
}

/**
 * Opens `counts.subscribers` subscribers of `target`, 50 at a time, `counts.stalled` of them spread through the opening
 * order (not all first or last). Each is added to `into` as it opens, so the caller closes them whatever happens.
 */
export async function openSubscribers(
  port: number, target: string, token: string, counts: { subscribers: number; stalled: number }, onDelay: OnDelay, into: Subscriber[],
): Promise<void> {
  const every = counts.stalled > 0 ? Math.floor(counts.subscribers / counts.stalled) : Infinity;
  await inBatches(counts.subscribers, 50, async (i) => {
    const stalls = i % every === every - 1 && into.filter((s) => s.stalls).length < counts.stalled;
    into.push(await subscribe(port, target, token, stalls, onDelay));
  });
}
