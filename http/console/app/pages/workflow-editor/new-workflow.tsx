import { useEffect, useState } from 'preact/hooks';
import { post, type ApiError } from '../../api.js';
import type { NewWorkflow, WorkflowWritten } from '../../api-types.js';
import { asApiError } from '../../data.js';
import { useMe } from '../../me.js';
import { navigate, useLocation } from '../../router.js';
import { ErrorNote, Loading, PageHeader } from '../../ui/bits.js';
import { canvasOf } from './definition-graph.js';
import { openProposal } from './proposal-text.js';
import { problemsOf } from './problems.js';
import { Workbench } from './workbench.js';
import type { ServerProblem } from './yaml-editor.js';

/** What a new workflow starts from: a valid definition with the three kinds of step most workflows have. */
export const STARTER_YAML = `schemaVersion: v2
name: new-workflow
trigger: {type: manual}
nodes:
  - id: plan
    kind: agent
    prompt: Read the issue and write a plan for the change
  - id: review
    kind: approval
    title: Does the plan look right?
  - id: build
    kind: agent
    prompt: Make the change and open a pull request
edges:
  - {source: plan, target: review}
  - {source: review, target: build}
`;

/**
 * A new workflow: a project, a name and its definition, created as version 1 (a draft), then edited on its own
 * page. `?project=<id>&proposal=<id>` starts from a builder proposal; a proposal drafted against an existing workflow
 * opens in that workflow's editor instead.
 */
export function NewWorkflowPage() {
  const me = useMe();
  const { query } = useLocation();
  const proposalId = query.get('proposal') ?? undefined;
  const [projectId, setProjectId] = useState(query.get('project') ?? me.projects[0]?.id ?? '');
  const [name, setName] = useState('');
  const [text, setText] = useState<string | undefined>(proposalId === undefined ? STARTER_YAML : undefined);
  const [problems, setProblems] = useState<readonly ServerProblem[]>([]);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (proposalId === undefined) return;
    openProposal(projectId, proposalId).then(
      (opened) => {
        if (opened.workflowId) {
          navigate(`/workflows/${encodeURIComponent(opened.workflowId)}/edit?proposal=${encodeURIComponent(proposalId)}`, { replace: true });
          return;
        }
        setName(opened.name);
        setText(opened.yaml);
        setNotice(`Opened proposal version ${opened.version}: review it, then create the workflow.`);
      },
      (err: unknown) => { setError(asApiError(err)); setText(STARTER_YAML); },
    );
  }, [proposalId]);

  if (me.role === 'viewer') {
    return <><PageHeader title="New workflow" /><p>Your role may read workflows but not create them. <a href="/workflows">Back to workflows</a>.</p></>;
  }
  if (me.projects.length === 0) {
    return <><PageHeader title="New workflow" /><p>You see no project to create a workflow in. An org owner or admin can give you one.</p></>;
  }
  if (text === undefined) return <><PageHeader title="New workflow" /><Loading what="the proposal" /></>;

  const create = async () => {
    if (busy) return;
    setError(undefined);
    setProblems([]);
    setBusy(true);
    try {
      const body: NewWorkflow = { name: name.trim(), definitionYaml: text, ...(canvasOf(text) ?? {}) };
      const created = await post<WorkflowWritten>(`/api/projects/${encodeURIComponent(projectId)}/workflows`, body);
      navigate(`/workflows/${encodeURIComponent(created.id)}/edit`);
    } catch (err) {
      const refused = asApiError(err);
      setError(refused);
      setProblems(problemsOf(refused));
    } finally {
      setBusy(false);
    }
  };

  return (
    <article aria-labelledby="page-title" class="editor-page">
      <PageHeader title="New workflow">
        <a class="button-link button-quiet" href="/workflows/builder">Draft with the builder instead</a>
      </PageHeader>
      <ErrorNote error={error} title="Refused" />
      {notice ? <p class="note" role="status">{notice}</p> : null}
      <form class="editor-actions" id="new-workflow" onSubmit={(e) => { e.preventDefault(); void create(); }}>
        <label>Project
          <select value={projectId} disabled={proposalId !== undefined} onChange={(e) => setProjectId(e.currentTarget.value)}>
            {me.projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
        <label>Name
          <input value={name} required maxLength={200} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy || name.trim() === ''}>Create workflow</button>
      </form>
      <Workbench text={text} onText={setText} problems={problems} onSave={() => { if (name.trim() !== '') void create(); }} />
    </article>
  );
}
