import { randomBytes } from 'node:crypto';
import { currentTrace, withTrace } from '../ops/kernel/trace-context.js';
import { TroupeError, type WireError } from '../ops/kernel/errors.js';
import { ajv, compileOnFirstUse, type LazyValidate } from '../schemas/ajv.js';

/**
 * The wire envelope every message between nodes travels in, versioned so a rolling upgrade can tell an old
 * peer from a broken one. Receivers validate it with ajv before trusting any field: a body that is not a v1
 * envelope is malformed (dead-lettered by the AMQP consumer), and a well-formed body of another version is a
 * typed `EnvelopeVersionError` so the mismatch is visible rather than mistaken for garbage.
 *
 * An ask's reply travels in an envelope of type `reply` whose `correlationId` is the ask's `id` and whose
 * payload is a `Reply`: the handler's value, or its TroupeError in wire form (`ops/kernel/errors.ts` toWire/fromWire).
 * See ops/decisions/0003-transport-over-rabbitmq.md.
 */
export const ENVELOPE_VERSION = 1;

/**
 * Largest encoded envelope a node sends or accepts. rabbitmq.conf sets the broker's `max_message_size` to 8 MiB;
 * staying at half of it means an oversized message fails here with a typed error instead of the broker closing
 * the channel (and with it every in-flight ask). HTTP bodies are capped at 1 MiB, so a request never comes close.
 */
export const MAX_ENVELOPE_BYTES = 4 * 1024 * 1024;

/** The longest error message a reply carries; longer ones are cut so a verbose handler cannot break its own reply. */
export const MAX_ERROR_MESSAGE_CHARS = 4096;

/** `event` carries a published event; its `to` is the topic. */
export type EnvelopeType = 'ask' | 'tell' | 'reply' | 'event';

export interface Envelope {
  readonly v: typeof ENVELOPE_VERSION;
  readonly id: string;
  readonly type: EnvelopeType;
  /** Actor address (`kind/id`) for asks and tells; the asking node's id for replies; the topic for events. */
  readonly to: string;
  /** Node id of the sender. */
  readonly from: string;
  /** Epoch milliseconds after which the receiver drops the message: the asker has given up. */
  readonly deadline: number;
  /** On a reply, the id of the ask it answers. */
  readonly correlationId?: string;
  /** On an ask or tell, the W3C `traceparent` of the request that made it (ops/kernel/trace-context.ts). */
  readonly trace?: string;
  readonly payload: unknown;
}

export type Reply =
  | { readonly v: typeof ENVELOPE_VERSION; readonly ok: true; readonly value?: unknown }
  | { readonly v: typeof ENVELOPE_VERSION; readonly ok: false; readonly error: WireError };

/** A body that is not a valid envelope: it can never be handled, so it goes to the dead-letter queue. */
export class MalformedEnvelopeError extends Error {
  constructor(readonly reason: string) {
    super(`malformed envelope: ${reason}`);
    this.name = 'MalformedEnvelopeError';
  }
}

/** A well-formed envelope of a version this node does not speak (a newer or older peer). */
export class EnvelopeVersionError extends Error {
  constructor(readonly received: unknown) {
    super(`envelope version ${JSON.stringify(received)} is not supported (this node speaks v${ENVELOPE_VERSION})`);
    this.name = 'EnvelopeVersionError';
  }
}

const idSchema = { type: 'string', minLength: 1, maxLength: 128 };
// Addresses are `kind/id` (transport/shards.ts); node ids follow ops/config.ts TROUPE_NODE_ID.
const addressSchema = { type: 'string', minLength: 3, maxLength: 512, pattern: '^[^/\\s]+/\\S+$' };
const nodeIdSchema = { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' };

const envelopeSchema = {
  type: 'object',
  required: ['v', 'id', 'type', 'to', 'from', 'deadline', 'payload'],
  additionalProperties: false,
  properties: {
    v: { const: ENVELOPE_VERSION },
    id: idSchema,
    type: { enum: ['ask', 'tell', 'reply', 'event'] },
    to: { type: 'string', minLength: 1, maxLength: 512 },
    from: nodeIdSchema,
    deadline: { type: 'integer', minimum: 0 },
    correlationId: idSchema,
    trace: { type: 'string', pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' },
    payload: {},
  },
  allOf: [
    { if: { properties: { type: { const: 'reply' } } }, then: { required: ['correlationId'], properties: { to: nodeIdSchema } } },
    { if: { properties: { type: { enum: ['ask', 'tell'] } } }, then: { properties: { to: addressSchema } } },
    { if: { properties: { type: { const: 'event' } } }, then: { properties: { to: { type: 'string', maxLength: 255 } } } },
  ],
};

const replySchema = {
  oneOf: [
    {
      type: 'object',
      required: ['v', 'ok'],
      additionalProperties: false,
      properties: { v: { const: ENVELOPE_VERSION }, ok: { const: true }, value: {} },
    },
    {
      type: 'object',
      required: ['v', 'ok', 'error'],
      additionalProperties: false,
      properties: {
        v: { const: ENVELOPE_VERSION },
        ok: { const: false },
        error: {
          type: 'object',
          required: ['code', 'message'],
          additionalProperties: false,
          properties: {
            code: { type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$' },
            message: { type: 'string', maxLength: MAX_ERROR_MESSAGE_CHARS },
            details: { type: 'object' },
          },
        },
      },
    },
  ],
};

// The shared instance: a private one compiled its own copy of the JSON Schema meta-schema at every start (decision 0051).
const validateEnvelope = compileOnFirstUse(ajv, envelopeSchema);
const validateReply = compileOnFirstUse(ajv, replySchema);

const addressPattern = new RegExp(addressSchema.pattern);

/** Callers build addresses from ids that came from outside (URL paths); a bad one is the client's error. */
export function assertAddress(address: string): void {
  if (typeof address !== 'string' || address.length > addressSchema.maxLength || !addressPattern.test(address)) {
    throw new TroupeError('VALIDATION_FAILED', 'malformed actor address', { address: String(address).slice(0, 64) });
  }
}

function firstError(validate: LazyValidate): string {
  const e = validate.errors?.[0];
  return e ? `${e.instancePath || '/'} ${e.message ?? 'is invalid'}` : 'is invalid';
}

function checkVersion(value: unknown, what: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new MalformedEnvelopeError(`${what} is not an object`);
  const v = (value as { v?: unknown }).v;
  if (v === undefined) throw new MalformedEnvelopeError(`${what} has no version`);
  if (v !== ENVELOPE_VERSION) throw new EnvelopeVersionError(v);
}

export interface NewEnvelope {
  type: EnvelopeType;
  to: string;
  from: string;
  deadline: number;
  payload: unknown;
  correlationId?: string;
}

/**
 * Message ids only need to be unique among the messages of every node, and are never shown outside the transport.
 * A random prefix per process (72 bits, so two processes share one with negligible odds) and a counter give that
 * for a tenth of a UUID's garbage: `randomUUID` builds its string from twenty pieces on every call, and every ask,
 * reply and batch takes one (G4 allocation profile, decision 0019).
 */
const ID_PREFIX = randomBytes(9).toString('base64url');
let idCounter = 0;

export function newMessageId(): string {
  return ID_PREFIX + (idCounter++).toString(36);
}

export function createEnvelope(fields: NewEnvelope): Envelope {
  // JSON has no `undefined`: a message of `undefined` arrives as `null`.
  const payload = fields.payload === undefined ? null : fields.payload;
  const id = newMessageId();
  if (fields.correlationId !== undefined) {
    return { v: ENVELOPE_VERSION, id, type: fields.type, to: fields.to, from: fields.from, deadline: fields.deadline, payload, correlationId: fields.correlationId };
  }
  // Asks and tells made while serving a request carry its trace to the node that runs the actor.
  const trace = fields.type === 'ask' || fields.type === 'tell' ? currentTrace()?.traceparent : undefined;
  // Literals rather than a spread: a spread copy cost a second, slower object on every reply (G4 profile).
  return trace === undefined
    ? { v: ENVELOPE_VERSION, id, type: fields.type, to: fields.to, from: fields.from, deadline: fields.deadline, payload }
    : { v: ENVELOPE_VERSION, id, type: fields.type, to: fields.to, from: fields.from, deadline: fields.deadline, payload, trace };
}

/** Runs the handling of an ask or tell inside the trace its envelope carries (so the actor's log lines name it). */
export function inTraceOf<T>(envelope: Envelope, fn: () => T): T {
  return withTrace(envelope.trace === undefined ? undefined : { traceparent: envelope.trace }, fn);
}

/** Serialises and checks the size; an envelope too large to send is our bug (the edge caps bodies far lower). */
export function encodeEnvelope(envelope: Envelope): Buffer {
  let text: string;
  try {
    text = JSON.stringify(envelope);
  } catch (err) {
    throw new TroupeError('INTERNAL', 'message is not serialisable', { reason: (err as Error).message });
  }
  const body = Buffer.from(text, 'utf8');
  if (body.byteLength > MAX_ENVELOPE_BYTES) {
    throw new TroupeError('INTERNAL', 'message exceeds the transport size limit', { bytes: body.byteLength, limit: MAX_ENVELOPE_BYTES });
  }
  return body;
}

/** What an envelope adds around its payload at most (addresses, ids, a trace): a payload copied in-process leaves that room. */
const ENVELOPE_FIELDS_BYTES = 2048;

/**
 * A message, reply or event handed over inside this process, as the wire would hand it over: a copy through JSON
 * (no shared references; `undefined` becomes null, a Date its ISO string; what JSON cannot carry fails as
 * `encodeEnvelope` does), refused past the size the wire takes. Without the envelope's bytes, their UTF-8 round trip
 * and the schema check a body from the wire needs: the envelope around an in-process message is made here, with an
 * address already checked, so only its payload can differ from what crossed the broker (decision 0057).
 */
export function copyAcrossWire<T>(value: T): T {
  return JSON.parse(wireText(value)) as T;
}

/** The JSON text `copyAcrossWire` copies through: checked as the wire checks it, to be parsed once per receiver. */
export function wireText(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new TroupeError('INTERNAL', 'message is not serialisable', { reason: (err as Error).message });
  }
  if (text === undefined) return 'null';
  // A UTF-16 length is at most the UTF-8 byte length and at least a third of it: count bytes only near the limit.
  if (text.length * 3 > MAX_ENVELOPE_BYTES - ENVELOPE_FIELDS_BYTES) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > MAX_ENVELOPE_BYTES - ENVELOPE_FIELDS_BYTES) {
      throw new TroupeError('INTERNAL', 'message exceeds the transport size limit', { bytes, limit: MAX_ENVELOPE_BYTES });
    }
  }
  return text;
}

/** One decoder for every body: `decode` without `stream` keeps no state between calls. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseBody(body: Buffer): unknown {
  if (body.byteLength > MAX_ENVELOPE_BYTES) throw new MalformedEnvelopeError(`body of ${body.byteLength} bytes exceeds ${MAX_ENVELOPE_BYTES}`);
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new MalformedEnvelopeError('body is not valid UTF-8');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new MalformedEnvelopeError('body is not valid JSON');
  }
}

/** Throws MalformedEnvelopeError or EnvelopeVersionError; a returned envelope has every field checked. */
export function decodeEnvelope(body: Buffer): Envelope {
  const value = parseBody(body);
  checkVersion(value, 'envelope');
  if (!validateEnvelope(value)) throw new MalformedEnvelopeError(firstError(validateEnvelope));
  return value as Envelope;
}

/** Checks a reply envelope's payload; throws like decodeEnvelope. */
export function readReply(envelope: Envelope): Reply {
  checkVersion(envelope.payload, 'reply');
  if (!validateReply(envelope.payload)) throw new MalformedEnvelopeError(`reply ${firstError(validateReply)}`);
  return envelope.payload as Reply;
}

export function okReply(value: unknown): Reply {
  return value === undefined ? { v: ENVELOPE_VERSION, ok: true } : { v: ENVELOPE_VERSION, ok: true, value };
}

export function errorReply(error: TroupeError): Reply {
  const wire = error.toWire();
  return { v: ENVELOPE_VERSION, ok: false, error: { ...wire, message: wire.message.slice(0, MAX_ERROR_MESSAGE_CHARS) } };
}
