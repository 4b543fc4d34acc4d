import { decodeEnvelope, MalformedEnvelopeError, type Envelope } from '../envelope.js';

/**
 * Several asks to one shard in one AMQP message, and several replies to one asker in one message (decision 0003,
 * "Batches"). Each enqueue, confirm and settlement on a quorum queue is a Raft command, and each message costs the
 * broker a routing step; asks leaving in the same event-loop turn for the same shard share them, as do replies
 * leaving in the same turn for the same asker. A batch body is the envelopes as they would travel alone, one per
 * line (JSON never contains a raw newline), so it is read with the same validation as a single message.
 */
export const ASK_BATCH_TYPE = 'ask-batch';
export const REPLY_BATCH_TYPE = 'reply-batch';
/** A batch bounds how much one redelivery re-runs and how long one message occupies a consumer. */
export const MAX_PER_BATCH = 64;
/** Bodies larger than this travel alone; a batch never grows past it. */
const MAX_BATCH_BYTES = 256 * 1024;
const NEWLINE = 0x0a;
const NEWLINE_BUFFER = Buffer.from([NEWLINE]);

export function encodeBatch(bodies: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (const body of bodies) {
    if (parts.length > 0) parts.push(NEWLINE_BUFFER);
    parts.push(body);
  }
  return Buffer.concat(parts);
}

/** Every line must be an envelope of `type` (a reply with its correlation id); otherwise the message is malformed. */
export function decodeBatch(content: Buffer, type: 'ask' | 'reply'): Envelope[] {
  if (content.byteLength > MAX_BATCH_BYTES) throw new MalformedEnvelopeError(`batch of ${content.byteLength} bytes exceeds ${MAX_BATCH_BYTES}`);
  const envelopes: Envelope[] = [];
  let from = 0;
  while (from <= content.byteLength) {
    let to = content.indexOf(NEWLINE, from);
    if (to === -1) to = content.byteLength;
    const envelope = decodeEnvelope(content.subarray(from, to));
    if (envelope.type !== type) throw new MalformedEnvelopeError(`a batch of ${type}s carried a ${envelope.type}`);
    if (type === 'reply' && envelope.correlationId === undefined) throw new MalformedEnvelopeError('a batched reply without a correlation id');
    envelopes.push(envelope);
    if (envelopes.length > MAX_PER_BATCH) throw new MalformedEnvelopeError(`a batch carries at most ${MAX_PER_BATCH} messages`);
    from = to + 1;
  }
  return envelopes;
}

export interface Outgoing {
  readonly id: string;
  readonly body: Buffer;
}

/**
 * Collects one turn's messages per key (a shard for asks, a reply-to address for replies) and hands them over in
 * the order they were added, in chunks of at most MAX_PER_BATCH messages and MAX_BATCH_BYTES, once the turn's
 * other work has run (`setImmediate`: after the promise continuations that add more, before the next I/O poll;
 * nothing waits for a timer).
 */
export class TurnOutbox<K> {
  private byKey = new Map<K, Outgoing[]>();
  private scheduled = false;

  constructor(private readonly send: (key: K, messages: readonly Outgoing[]) => void) {}

  add(key: K, message: Outgoing): void {
    let queue = this.byKey.get(key);
    if (queue === undefined) this.byKey.set(key, (queue = []));
    queue.push(message);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  flush(): void {
    this.scheduled = false;
    if (this.byKey.size === 0) return;
    // A fresh Map per turn, not `clear` (ops/kernel/churn-map.ts).
    const batches = this.byKey;
    this.byKey = new Map();
    for (const [key, messages] of batches) this.sendInChunks(key, messages);
  }

  /** Sends one key's waiting messages now (a tell must not overtake asks made before it in the same turn). */
  flushKey(key: K): void {
    const messages = this.byKey.get(key);
    if (messages === undefined) return;
    this.byKey.delete(key);
    this.sendInChunks(key, messages);
  }

  private sendInChunks(key: K, messages: readonly Outgoing[]): void {
    let chunk: Outgoing[] = [];
    let bytes = 0;
    for (const message of messages) {
      if (chunk.length > 0 && (chunk.length === MAX_PER_BATCH || bytes + message.body.byteLength + 1 > MAX_BATCH_BYTES)) {
        this.send(key, chunk);
        chunk = [];
        bytes = 0;
      }
      chunk.push(message);
      bytes += message.body.byteLength + 1;
    }
    if (chunk.length > 0) this.send(key, chunk);
  }
}
