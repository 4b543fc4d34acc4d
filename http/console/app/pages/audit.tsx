import { useState } from 'preact/hooks';
import { get, withQuery } from '../api.js';
import type { AuditEntry, AuditPage, AuditVerification } from '../api-types.js';
import { asApiError, useApi } from '../data.js';
import { actorName, useMe } from '../me.js';
import { Empty, ErrorNote, Loading, PageHeader, Status, Time } from '../ui/bits.js';

/** The org's audit trail, newest first, with the hash chain recomputed on request. */
export function Audit() {
  const me = useMe();
  const first = useApi<AuditPage>('/api/audit?limit=50');
  const verification = useApi<AuditVerification>('/api/audit/verify');
  const [older, setOlder] = useState<AuditEntry[]>([]);
  const [cursor, setCursor] = useState<string | null | undefined>(undefined);
  const [moreError, setMoreError] = useState<ReturnType<typeof asApiError> | undefined>(undefined);
  const next = cursor === undefined ? first.data?.nextCursor ?? null : cursor;
  const entries = [...(first.data?.entries ?? []), ...older];
  const more = () => {
    if (next === null) return;
    get<AuditPage>(withQuery('/api/audit', { limit: 50, cursor: next })).then(
      (page) => { setOlder((o) => [...o, ...page.entries]); setCursor(page.nextCursor); },
      (err: unknown) => setMoreError(asApiError(err)),
    );
  };
  const v = verification.data;
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Audit">
        <button type="button" class="button-quiet" onClick={verification.reload}>Verify the chain again</button>
      </PageHeader>
      <ErrorNote error={verification.error} title="The chain could not be verified" />
      {v ? (
        <p class={`note ${v.valid ? '' : 'note-error'}`} role="status" data-chain-valid={String(v.valid)}>
          {v.valid ? `The hash chain holds: ${v.checked} entries recomputed.` : `The chain is broken at entry ${v.firstBrokenSeq} (${v.checked} checked). Entries from there on cannot be trusted.`}
        </p>
      ) : verification.error ? null : <Loading what="the chain check" />}
      <ErrorNote error={first.error ?? moreError} title="The audit trail could not be read" />
      {!first.data ? (first.error ? null : <Loading what="audit entries" />) : entries.length === 0 ? (
        <Empty title="Nothing audited yet."><p>Workflow versions, policy changes, credential rotations and other governed actions appear here.</p></Empty>
      ) : (
        <div class="table-wrap" tabIndex={0}>
          <table class="list">
            <caption class="sr-only">Audit entries, newest first</caption>
            <thead><tr><th scope="col">#</th><th scope="col">Event</th><th scope="col">Actor</th><th scope="col">Subject</th><th scope="col">When</th></tr></thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.seq}>
                  <td>{e.seq}</td><td><Status value={e.type} /></td><td>{actorName(me, e.actor)}</td><td>{e.subject ? <code>{e.subject}</code> : '—'}</td><td><Time at={e.createdAt} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {next !== null && entries.length > 0 ? <button type="button" class="button-quiet" onClick={more}>Show older entries</button> : null}
    </section>
  );
}
