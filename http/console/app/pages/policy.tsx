import { useState } from 'preact/hooks';
import { post, type ApiError } from '../api.js';
import type { Policy, PolicyDetail, PolicySimulation, PolicyVersion } from '../api-types.js';
import { asApiError, useApi } from '../data.js';
import { actorName, useMe } from '../me.js';
import { ErrorNote, Loading, PageHeader, Status, Time } from '../ui/bits.js';

const EXAMPLE_PLAN = JSON.stringify({
  name: 'triage', description: 'Plan, ask, ship',
  nodes: [{ id: 'plan', nodeKey: 'agent', config: {} }, { id: 'gate', nodeKey: 'approval', config: {} }],
  edges: [{ source: 'plan', target: 'gate' }],
}, null, 2);

/** A policy with its versions newest first, and a read-only simulation of a canvas against one exact revision. */
export function PolicyPage({ id }: { id: string }) {
  const me = useMe();
  const loaded = useApi<PolicyDetail>(`/api/policies/${encodeURIComponent(id)}`);
  if (loaded.error) return <><PageHeader title="Policy" /><ErrorNote error={loaded.error} /></>;
  if (!loaded.data) return <Loading what="the policy" />;
  const { policy, versions } = loaded.data;
  return (
    <article aria-labelledby="page-title">
      <PageHeader title={policy.name}><Status value={policy.status} /></PageHeader>
      <p class="muted">{policy.scope} policy · version {policy.version}{policy.description ? ` · ${policy.description}` : ''}</p>
      <section aria-labelledby="versions-title">
        <h2 id="versions-title">Versions</h2>
        <ol class="plain versions-list">
          {versions.map((v) => (
            <li key={v.id} class="card">
              <p><strong>v{v.version}</strong> · {actorName(me, v.changedBy)} · <Time at={v.createdAt} />{v.changeReason ? ` · ${v.changeReason}` : ''}</p>
              <pre class="code-block"><code>{v.cedarPolicy}</code></pre>
            </li>
          ))}
        </ol>
      </section>
      <SimulateForm policy={policy} versions={versions} />
    </article>
  );
}

function SimulateForm({ policy, versions }: { policy: Policy; versions: PolicyVersion[] }) {
  const me = useMe();
  const projects = policy.scope === 'project' ? me.projects.filter((p) => p.id === policy.scopeId) : me.projects;
  const [projectId, setProjectId] = useState(projects[0]?.id ?? '');
  const [version, setVersion] = useState(versions[0]?.version ?? policy.version);
  const [plan, setPlan] = useState(EXAMPLE_PLAN);
  const [result, setResult] = useState<PolicySimulation | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setResult(undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(plan);
    } catch (err) {
      setError(asApiError(new Error(`The canvas is not valid JSON: ${(err as Error).message}`)));
      return;
    }
    try {
      setResult(await post<PolicySimulation>(`/api/projects/${projectId}/authoring/simulate`, { policyId: policy.id, policyVersion: version, plan: parsed }));
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <form class="card stack" onSubmit={submit} aria-labelledby="simulate-title">
      <h2 id="simulate-title">Simulate a canvas</h2>
      <p class="muted small">Read-only: asks Cedar, as you, whether each node of the canvas would be allowed under this revision joined with the defaults.</p>
      <label for="sim-project">Project</label>
      <select id="sim-project" value={projectId} onChange={(e) => setProjectId((e.target as HTMLSelectElement).value)}>
        {projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
      </select>
      <label for="sim-version">Policy revision</label>
      <select id="sim-version" value={String(version)} onChange={(e) => setVersion(Number((e.target as HTMLSelectElement).value))}>
        {versions.map((v) => <option key={v.version} value={String(v.version)}>v{v.version}</option>)}
      </select>
      <label for="sim-plan">Canvas (JSON: name, description, nodes with id, nodeKey and config, edges)</label>
      <textarea id="sim-plan" rows={10} class="mono" value={plan} onInput={(e) => setPlan((e.target as HTMLTextAreaElement).value)} />
      <button type="submit" disabled={projectId === ''}>Simulate</button>
      <ErrorNote error={error} title="Not simulated" />
      {result ? (
        <div role="status" class="simulation">
          <p>Decision: <Status value={result.decision === 'allow' ? 'approved' : 'rejected'} /> <strong>{result.decision}</strong></p>
          <ul class="plain">
            {result.nodes.map((n) => (
              <li key={n.id}><code>{n.id}</code>: {n.decision}{n.reasons.length ? ` (${n.reasons.join(', ')})` : ''}{n.errors.length ? `: ${n.errors.join('; ')}` : ''}</li>
            ))}
          </ul>
        </div>
      ) : null}
    </form>
  );
}
