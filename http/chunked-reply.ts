import type { Logger } from '../ops/kernel/logger.js';
import type { Exchange } from './exchange.js';

/**
 * Sends a reply whose body is produced a chunk at a time (`ChunkedReply`, http/types.ts): a download too large to
 * hold in memory, such as a session's whole transcript as NDJSON. Status and headers go first; each chunk is written
 * as the client takes it: while uWS holds unsent bytes (a write answered false) the next chunk waits for `onWritable`,
 * so the node never buffers more than about one chunk per download whatever the client's speed. uWS frames the body
 * with chunked transfer encoding. A client that goes away stops the producer; a producer that fails after the first
 * byte can no longer be answered with an error, so the connection is cut and the client sees a truncated body.
 *
 * Returns the status the access log records: the reply's, 499 for a client gone, 500 for a producer that failed.
 */
export async function sendChunked(
  exchange: Exchange, status: number, headers: Readonly<Record<string, string>>, chunks: AsyncIterable<string>, log: Logger, reqId: string,
): Promise<number> {
  if (!exchange.startStream(status, headers, '')) return 499;
  const res = exchange.res;
  const iterator = chunks[Symbol.asyncIterator]();
  // One abort listener for the whole download (the exchange keeps every listener it is given), waking the current wait.
  let wake: (() => void) | undefined;
  exchange.onAbort(() => wake?.());
  // uWS flushes what it holds only when an onWritable handler writes something (as http/sse.ts found), so once a write
  // is refused the next write happens inside the handler: the chunk after a refused one is read ahead, and waits. uWS
  // keeps calling the one handler a response has whenever its socket drains, so it runs only the write waiting now;
  // a drain while the producer was still making the next chunk lets that chunk go at once.
  let waiting: { write: () => void; done: () => void } | undefined;
  let drainedIdle = false;
  res.onWritable(() => {
    const w = waiting;
    waiting = undefined;
    if (w === undefined) drainedIdle = true;
    else {
      if (!exchange.clientGone) w.write();
      w.done();
    }
    return true;
  });
  const whenWritable = (write: () => void): Promise<void> => {
    if (drainedIdle) {
      drainedIdle = false;
      res.cork(write);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      wake = resolve;
      waiting = { write, done: resolve };
    }).finally(() => { wake = undefined; });
  };
  let blocked = false;
  try {
    for (;;) {
      const next = await iterator.next();
      if (exchange.clientGone) return 499;
      if (next.done) break;
      let accepted = true;
      drainedIdle &&= blocked;
      if (blocked) await whenWritable(() => { accepted = res.write(next.value); });
      else res.cork(() => { accepted = res.write(next.value); });
      if (exchange.clientGone) return 499;
      blocked = !accepted;
    }
    if (blocked) await whenWritable(() => res.end());
    else res.cork(() => res.end());
    return exchange.clientGone ? 499 : status;
  } catch (err) {
    log.error({ err, reqId }, 'a streamed reply failed after it began; the connection is cut');
    if (!exchange.clientGone) res.close();
    return 500;
  } finally {
    // Lets the producer release what it holds (a database cursor, a page) when the loop ended early.
    await iterator.return?.().catch(() => undefined);
  }
}
