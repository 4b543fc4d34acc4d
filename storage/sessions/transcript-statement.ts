import type { TransitionStatement } from '../transition-statement.js';
import { kindCode, storableText, type NewTranscriptEntry } from './transcript-kinds.js';

/**
 * A session transition's transcript entries (its status change, the prompts it recorded) as parts of the
 * transition's own statement (storage/transition-statement.ts, decision 0055), so they are durable exactly when the
 * transition is and cost no round trip of their own. Each entry is gated on the part that records the fact it tells
 * (`exists (select from <part>)`, a part with `returning`): a replayed transition, whose fact is already recorded,
 * adds no entry twice.
 *
 * The head row takes the entries' numbers in the same statement (an upsert locks it), so their `seq` continues the
 * transcript's without a gap. These entries are not bounded by TROUPE_TRANSCRIPT_MAX_BYTES, also after the cap's
 * notice: a status change or a prompt is never lost to a flood of output (a run has a handful of them).
 */
export interface GatedEntry {
  /** A SQL condition; the entry is written only when it holds. */
  readonly gate: string;
  readonly entry: NewTranscriptEntry;
}

export function transcriptParts(st: TransitionStatement, orgId: string, sessionKey: string, entries: readonly GatedEntry[], now: number): void {
  if (entries.length === 0) return;
  const org = st.value(orgId);
  const key = st.value(sessionKey);
  const rows = entries.map(({ gate, entry }, i) => {
    const data = entry.data === undefined ? 'null::jsonb' : `${st.value(JSON.stringify(entry.data))}::jsonb`;
    return `select ${i + 1} as ord, ${kindCode(entry.kind)}::smallint as kind, ${st.value(storableText(entry.text))}::text as text,
      ${st.value(entry.at)}::timestamptz as at, ${st.value(entry.run ?? null)}::int as run, ${data} as data where ${gate}`;
  });
  st.part('s_tr_rows', `select r.*, row_number() over (order by r.ord) as n from (${rows.join('\nunion all\n')}) r`);
  const runs = entries.map((e) => e.entry.run).filter((r): r is number => r !== undefined);
  st.part('s_tr_head', `insert into session_transcript_heads as h (org_id, session_id, last_seq, bytes, run, updated_at)
    select ${org}, ${key}, count(*), coalesce(sum(octet_length(text) + coalesce(octet_length(data::text), 0)), 0), ${st.value(runs.at(-1) ?? null)}::int, ${st.value(new Date(now))}
      from s_tr_rows having count(*) > 0
    on conflict (org_id, session_id) do update set last_seq = h.last_seq + excluded.last_seq, bytes = h.bytes + excluded.bytes,
      run = coalesce(excluded.run, h.run), updated_at = excluded.updated_at
    returning last_seq - (select count(*) from s_tr_rows) as base, run`);
  st.part('s_tr_entries', `insert into session_transcript_entries (org_id, session_id, seq, at, kind, run, text, data)
    select ${org}, ${key}, h.base + r.n, r.at, r.kind, coalesce(r.run, h.run), r.text, r.data from s_tr_head h cross join s_tr_rows r`);
}
