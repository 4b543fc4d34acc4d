import { withQuery } from '../api.js';
import type { Incident, IncidentList } from '../api-types.js';
import { useApi } from '../data.js';
import { navigate, useLocation } from '../router.js';
import { Empty, ErrorNote, Loading, PageHeader, Status, Time } from '../ui/bits.js';
import { webLink } from '../web-link.js';

export function Incidents() {
  const { query } = useLocation();
  const status = query.get('status') ?? '';
  const list = useApi<IncidentList>(withQuery('/api/incidents', { status, limit: 100 }));
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
                  <td><IncidentTitle incident={i} /><span class="row-title">{i.source}</span></td>
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

/** The title links to the provider's page only when its URL is http(s); anything else stays plain text. */
function IncidentTitle({ incident }: { incident: Pick<Incident, 'title' | 'url'> }) {
  const href = webLink(incident.url);
  return href === null ? <>{incident.title}</> : <a href={href} rel="noreferrer noopener" target="_blank">{incident.title}</a>;
}
