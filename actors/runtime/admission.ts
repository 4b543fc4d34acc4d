import { TroupeError } from '../../ops/kernel/errors.js';
import type { ActorBehavior } from './machine.js';

/**
 * The gate every message passes before an actor is spawned for it: hostile input must not create actors or
 * reach `decide`. The runtime and the test harness share it, so a table test sees what production sees.
 */

/** Message types are short identifiers (`session.start`); anything longer is not one of ours. */
const MAX_MESSAGE_TYPE_LENGTH = 128;

export function admitMessage<M extends { type: string }>(
  behavior: ActorBehavior<unknown, M, unknown, unknown>, message: unknown,
): M {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) {
    throw new TroupeError('VALIDATION_FAILED', 'a message must be a JSON object', { kind: behavior.kind });
  }
  const type = (message as { type?: unknown }).type;
  if (typeof type !== 'string' || type.length === 0 || type.length > MAX_MESSAGE_TYPE_LENGTH) {
    throw new TroupeError('VALIDATION_FAILED', 'a message needs a string "type"', { kind: behavior.kind });
  }
  let reason: string | undefined;
  try {
    reason = behavior.validate?.(message);
  } catch {
    // A validator that throws on some input is our bug, not the sender's; the caller logs the cause.
    throw new TroupeError('INTERNAL', undefined, { kind: behavior.kind, msgType: type });
  }
  if (reason !== undefined) {
    throw new TroupeError('VALIDATION_FAILED', `invalid ${type} message: ${reason}`, { kind: behavior.kind, msgType: type, reason });
  }
  return message as M;
}
