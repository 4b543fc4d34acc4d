import type { WorkflowVersion } from '../api-types.js';
import { useApi } from '../data.js';
import { alignLines, diffGraph } from '../diff.js';
import { ErrorNote, Loading } from '../ui/bits.js';

/** Two versions side by side: the graph's changes as lists, then the YAML line by line. */
export function VersionDiff({ workflowId, from, to }: { workflowId: string; from: number; to: number }) {
  const a = useApi<WorkflowVersion>(`/api/workflows/${workflowId}/versions/${from}`);
  const b = useApi<WorkflowVersion>(`/api/workflows/${workflowId}/versions/${to}`);
  const error = a.error ?? b.error;
  return (
    <section aria-labelledby="diff-title" class="diff">
      <h2 id="diff-title">Changes from v{from} to v{to}</h2>
      <ErrorNote error={error} title="The versions could not be compared" />
      {!a.data || !b.data || a.data.version !== from || b.data.version !== to ? (error ? null : <Loading what="both versions" />) : <Compared a={a.data} b={b.data} />}
    </section>
  );
}

function Compared({ a, b }: { a: WorkflowVersion; b: WorkflowVersion }) {
  const graph = diffGraph(a, b);
  const lines = alignLines(a.definitionYaml, b.definitionYaml);
  const nothing = graph.nodesAdded.length + graph.nodesRemoved.length + graph.nodesChanged.length
    + graph.edgesAdded.length + graph.edgesRemoved.length + graph.edgesChanged.length === 0;
  return (
    <>
      {nothing ? <p class="muted">The canvas is the same in both versions.</p> : (
        <ul class="changes">
          {graph.nodesAdded.map((id) => <li key={`na-${id}`} class="added">Node <code>{id}</code> added</li>)}
          {graph.nodesRemoved.map((id) => <li key={`nr-${id}`} class="removed">Node <code>{id}</code> removed</li>)}
          {graph.nodesChanged.map((n) => <li key={`nc-${n.id}`} class="changed">Node <code>{n.id}</code> changed: {n.fields.join(', ')}</li>)}
          {graph.edgesAdded.map((k) => <li key={`ea-${k}`} class="added">Edge <code>{k}</code> added</li>)}
          {graph.edgesRemoved.map((k) => <li key={`er-${k}`} class="removed">Edge <code>{k}</code> removed</li>)}
          {graph.edgesChanged.map((k) => <li key={`ec-${k}`} class="changed">Edge <code>{k}</code> changed</li>)}
        </ul>
      )}
      <div class="table-wrap" tabIndex={0}>
        <table class="yaml-diff">
          <caption>Definition YAML: v{a.version} (left) and v{b.version} (right)</caption>
          <thead><tr><th scope="col">v{a.version}</th><th scope="col">v{b.version}</th></tr></thead>
          <tbody>
            {lines.map((l, i) => (
              <tr key={i} class={`line-${l.kind}`}>
                <td>{l.left === null ? '' : <code>{l.left || ' '}</code>}</td>
                <td>{l.right === null ? '' : <code>{l.right || ' '}</code>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
