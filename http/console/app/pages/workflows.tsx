import type { WorkflowList } from '../api-types.js';
import { useApi } from '../data.js';
import { projectName, useMe } from '../me.js';
import { Empty, ErrorNote, Loading, PageHeader, Status, Time } from '../ui/bits.js';

export function Workflows() {
  const me = useMe();
  const list = useApi<WorkflowList>('/api/workflows');
  // A viewer may not create workflows (the server refuses it too); every other org role may in its projects.
  const mayAuthor = me.role !== 'viewer' && me.projects.length > 0;
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Workflows">
        {mayAuthor ? <><a class="button-link" href="/workflows/new">New workflow</a><a class="button-link button-quiet" href="/workflows/builder">Draft with the builder</a></> : null}
      </PageHeader>
      <ErrorNote error={list.error} title="Workflows could not be read" />
      {!list.data ? (list.error ? null : <Loading what="workflows" />) : list.data.workflows.length === 0 ? (
        <Empty title="No workflows yet.">
          {mayAuthor
            ? <p><a href="/workflows/new">Write one in the editor</a>, or <a href="/workflows/builder">draft one with the builder</a> by answering three questions.</p>
            : <p>Your role may read workflows but not create them.</p>}
        </Empty>
      ) : (
        <div class="table-wrap" tabIndex={0}>
          <table class="list">
            <caption class="sr-only">Workflows</caption>
            <thead><tr><th scope="col">Workflow</th><th scope="col">Status</th><th scope="col">Version</th><th scope="col">Project</th><th scope="col">Changed</th></tr></thead>
            <tbody>
              {list.data.workflows.map((w) => (
                <tr key={w.id}>
                  <td><a href={`/workflows/${w.id}`}>{w.name}</a></td>
                  <td><Status value={w.status} /></td>
                  <td>v{w.version}{w.publishedVersion !== null ? <span class="muted"> (live: v{w.publishedVersion})</span> : null}</td>
                  <td>{projectName(me, w.projectId)}</td>
                  <td><Time at={w.updatedAt} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
