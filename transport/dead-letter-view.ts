import { createHash } from 'node:crypto';
import type { DeadLetter, DeadLetterSelection } from './port.js';
import { decodeEnvelope, type Envelope } from './envelope.js';

/** Payloads larger than this are not shown in a listing (a body may be up to 4 MiB; a page may hold a thousand). */
export const PAYLOAD_SHOWN_BYTES = 16 * 1024;

export interface DeadLetterFacts {
  readonly messageId: string | undefined;
  readonly reason: string;
  readonly at: Date | null;
}

/** A dead letter as operators see it, and the envelope to replay when it can be read. */
export function describeDeadLetter(body: Buffer, facts: DeadLetterFacts): { letter: DeadLetter; envelope: Envelope | undefined } {
  let envelope: Envelope | undefined;
  try {
    const decoded = decodeEnvelope(body);
    if (decoded.type === 'ask' || decoded.type === 'tell') envelope = decoded;
  } catch {
    envelope = undefined;
  }
  const id = facts.messageId || envelope?.id || `sha256-${createHash('sha256').update(body).digest('hex').slice(0, 32)}`;
  return {
    envelope,
    letter: {
      id,
      kind: envelope ? (envelope.type as 'ask' | 'tell') : 'unreadable',
      address: envelope?.to ?? null,
      reason: facts.reason.replace(/_/g, '-'),
      deadLetteredAt: facts.at ? facts.at.toISOString() : null,
      bytes: body.length,
      payload: envelope && body.length <= PAYLOAD_SHOWN_BYTES ? envelope.payload : null,
    },
  };
}

/** Whether a selection takes a dead letter, and the ids asked for it has not met yet. */
export class SelectionTracker {
  private readonly wanted: Set<string> | undefined;

  constructor(selection: DeadLetterSelection) {
    this.wanted = 'ids' in selection ? new Set(selection.ids) : undefined;
  }

  takes(id: string): boolean {
    return this.wanted === undefined || this.wanted.delete(id);
  }

  /** True when every id asked for has been met (never for `all`). */
  get complete(): boolean {
    return this.wanted !== undefined && this.wanted.size === 0;
  }

  notFound(): string[] {
    return this.wanted === undefined ? [] : [...this.wanted];
  }
}
