import { withQuery } from '../api.js';
import type { PolicyList } from '../api-types.js';
import { useApi } from '../data.js';
import { useLocation, navigate } from '../router.js';
import { Empty, ErrorNote, Loading, PageHeader, Status, Time } from '../ui/bits.js';

export function Policies() {
  const { query } = useLocation();
  const status = query.get('status') ?? '';
  const list = useApi<PolicyList>(withQuery('/api/policies', { status }));
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Policies" />
      <p class="muted">Stored Cedar policies join the default set in every decision of the org (or of one project).</p>
      <div class="toolbar">
        <label>Status
          <select value={status} onChange={(e) => navigate(withQuery('/policies', { status: (e.target as HTMLSelectElement).value }))}>
            <option value="">All</option><option value="active">active</option><option value="draft">draft</option><option value="archived">archived</option>
          </select>
        </label>
      </div>
      <ErrorNote error={list.error} title="Policies could not be read" />
      {!list.data ? (list.error ? null : <Loading what="policies" />) : list.data.policies.length === 0 ? (
        <Empty title="No stored policies.">
          <p>The default policy set applies. Admins and owners add policies with <code>POST /api/policies</code> (a name and Cedar text).</p>
        </Empty>
      ) : (
        <div class="table-wrap" tabIndex={0}>
          <table class="list">
            <caption class="sr-only">Policies</caption>
            <thead><tr><th scope="col">Policy</th><th scope="col">Status</th><th scope="col">Scope</th><th scope="col">Version</th><th scope="col">Changed</th></tr></thead>
            <tbody>
              {list.data.policies.map((p) => (
                <tr key={p.id}>
                  <td><a href={`/policies/${p.id}`}>{p.name}</a>{p.description ? <span class="row-title">{p.description}</span> : null}</td>
                  <td><Status value={p.status} /></td>
                  <td>{p.scope}</td>
                  <td>v{p.version}</td>
                  <td><Time at={p.updatedAt} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
