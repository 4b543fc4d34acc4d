import { TroupeError } from '../../ops/kernel/errors.js';
import { ajv, compileSchema } from '../../schemas/ajv.js';
import type { ActorBehavior } from './machine.js';

/**
 * The gate every message passes before an actor is spawned for it: hostile input must not create actors or
 * reach `decide`. The runtime and the test harness share it, so a table test sees what production sees.
 */

/** Message types are short identifiers (`session.start`); anything longer is not one of ours. */
const MAX_MESSAGE_TYPE_LENGTH = 128;

/** Checks one message and returns it typed, or throws VALIDATION_FAILED saying what is wrong with it. */
export type Admission<M> = (message: unknown) => M;

/**
 * The returned gate is what every message of that kind goes through. The kind's message schema is compiled on the
 * first message, not at registration: a node registers every kind at start, and compiling all their schemas then
 * was a sixth of its start-up CPU (decision 0051). Compiling sits outside the validator's try, so a schema that
 * does not compile fails as itself, not as a rejected message.
 */
export function compileAdmission<M extends { type: string }>(
  behavior: Pick<ActorBehavior<unknown, M, unknown, unknown>, 'kind' | 'messages'>,
): Admission<M> {
  const { kind } = behavior;
  let compiled: ReturnType<typeof compileSchema> | undefined;
  return (message) => {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      throw new TroupeError('VALIDATION_FAILED', 'a message must be a JSON object', { kind });
    }
    const type = (message as { type?: unknown }).type;
    if (typeof type !== 'string' || type.length === 0 || type.length > MAX_MESSAGE_TYPE_LENGTH) {
      throw new TroupeError('VALIDATION_FAILED', 'a message needs a string "type"', { kind });
    }
    const validate = (compiled ??= compileSchema(ajv, behavior.messages));
    let valid: boolean;
    try {
      valid = validate(message);
    } catch {
      // A validator that throws on some input is our bug, not the sender's; the caller logs the cause.
      throw new TroupeError('INTERNAL', undefined, { kind, msgType: type });
    }
    if (!valid) {
      const first = validate.errors?.[0];
      const reason = first === undefined ? 'is invalid' : `${first.instancePath || '/'} ${first.message ?? 'is invalid'}`;
      throw new TroupeError('VALIDATION_FAILED', `invalid ${type} message: ${reason}`, { kind, msgType: type, reason });
    }
    return message as M;
  };
}
