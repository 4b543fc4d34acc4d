import { withQuery } from '../api.js';
import { useApi } from '../data.js';
import { navigate, useLocation } from '../router.js';
import { Empty, ErrorNote, Loading, PageHeader, Status, Time } from '../ui/bits.js';

interface Incident { id: string; source: string; title: string; severity: string | null; status: string; url: string | null; createdAt: string; resolvedAt: string | null }

export function Incidents() {
  const { query } = useLocation();
  const status = query.get('status') ?? '';
  const list = useApi<{ incidents: Incident[]; total: number }>(withQuery('/api/incidents', { status, limit: 100 }));
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Incidents" />
      <div class="toolbar">
        <label>Status
          <select value={status} onChange={(e) => navigate(withQuery('/incidents', { status: (e.target as HTMLSelectElement).value }))}>
            <option value="">All</option><option value="triage,investigating,fixing,monitoring">Open</option><option value="resolved">Resolved</option>
          </select>
        </label>
      </div>
      <ErrorNote error={list.error} title="Incidents could not be read" />
      {!list.data ? (list.error ? null : <Loading what="incidents" />) : list.data.incidents.length === 0 ? (
        <Empty title="No incidents.">
          <p>Incidents arrive from incident.io: an admin connects it with <code>PUT /api/org/ORG/integrations/incident-io</code> and points its webhook at <code>{location.origin}/api/webhooks/ingest/incident-io</code>.</p>
        </Empty>
      ) : (
        <div class="table-wrap" tabIndex={0}>
          <table class="list">
            <caption>{list.data.total} incidents, newest first</caption>
            <thead><tr><th scope="col">Incident</th><th scope="col">Status</th><th scope="col">Severity</th><th scope="col">Opened</th><th scope="col">Resolved</th></tr></thead>
            <tbody>
              {list.data.incidents.map((i) => (
                <tr key={i.id}>
                  <td>{i.url ? <a href={i.url} rel="noreferrer noopener" target="_blank">{i.title}</a> : i.title}<span class="row-title">{i.source}</span></td>
                  <td><Status value={i.status === 'resolved' ? 'resolved' : 'open'} /> <span class="muted small">{i.status}</span></td>
                  <td>{i.severity ?? '—'}</td>
                  <td><Time at={i.createdAt} /></td>
                  <td><Time at={i.resolvedAt} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
