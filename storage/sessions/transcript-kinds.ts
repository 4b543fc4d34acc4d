/**
 * Kinds of transcript entries and their stored codes (migration 0054 keeps a smallint per entry, not the word).
 * Codes are permanent: a new kind takes a new code.
 */
export const TRANSCRIPT_KINDS = ['output', 'prompt', 'tool', 'status', 'notice'] as const;
export type TranscriptKind = typeof TRANSCRIPT_KINDS[number];

const codes: Record<TranscriptKind, number> = { output: 1, prompt: 2, tool: 3, status: 4, notice: 5 };
const kindsByCode = new Map<number, TranscriptKind>(Object.entries(codes).map(([k, c]) => [c, k as TranscriptKind]));

export const kindCode = (kind: TranscriptKind): number => codes[kind];

export function kindOfCode(code: number): TranscriptKind {
  const kind = kindsByCode.get(code);
  if (kind === undefined) throw new Error(`unknown transcript entry kind code ${code}`);
  return kind;
}

/** An entry to append: `seq` is given by storage. `data` holds what a kind adds (a status's `from`, a tool's name). */
export interface NewTranscriptEntry {
  readonly kind: TranscriptKind;
  readonly text: string;
  readonly at: Date;
  /** The session's run (epoch) the entry belongs to; absent, the run of the transcript's latest status entry. */
  readonly run?: number;
  readonly data?: Readonly<Record<string, unknown>>;
}

/** An entry as read back. */
export interface TranscriptEntry {
  readonly seq: number;
  readonly at: string;
  readonly kind: TranscriptKind;
  readonly text: string;
  readonly run: number | null;
  readonly [extra: string]: unknown;
}

/** Postgres text cannot hold NUL: an agent printing one still has the rest of its line kept. */
export const storableText = (text: string): string => (text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text);
