import { useEffect, useRef, useState } from 'preact/hooks';
import { patch, type ApiError } from '../../api.js';
import type { Workflow, WorkflowChange, WorkflowVersionList } from '../../api-types.js';
import { asApiError, useApi } from '../../data.js';
import { projectName, useMe, type Me } from '../../me.js';
import { useLocation } from '../../router.js';
import { ErrorNote, Loading, PageHeader, Status } from '../../ui/bits.js';
import { VersionDiff } from '../version-diff.js';
import { VersionsTable } from '../workflow.js';
import { canvasOf } from './definition-graph.js';
import { openProposal } from './proposal-text.js';
import { problemsOf } from './problems.js';
import { Workbench } from './workbench.js';
import type { ServerProblem } from './yaml-editor.js';

/**
 * A workflow's definition in the editor: save makes a new version (with the canvas read from the YAML), publish
 * makes the saved version live, and the versions below compare and roll back as on the workflow page. A refusal of
 * the definition is marked on its line. `?proposal=<id>` opens a builder proposal's plan as an unsaved change.
 */
export function EditWorkflowPage({ id }: { id: string }) {
  const me = useMe();
  const { query } = useLocation();
  const proposalId = query.get('proposal') ?? undefined;
  const workflow = useApi<Workflow>(`/api/workflows/${encodeURIComponent(id)}`);
  const versions = useApi<WorkflowVersionList>(`/api/workflows/${encodeURIComponent(id)}/versions`);
  const [text, setText] = useState<string | undefined>(undefined);
  const [saved, setSaved] = useState('');
  const [reason, setReason] = useState('');
  const [problems, setProblems] = useState<readonly ServerProblem[]>([]);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);
  const [compare, setCompare] = useState<{ from?: number; to?: number }>({});
  const shownVersion = useRef<number | undefined>(undefined);
  const w = workflow.data;

  // A newly saved, published or rolled-back version replaces the text; the first load may bring a proposal instead.
  useEffect(() => {
    if (!w || shownVersion.current === w.version) return;
    const first = shownVersion.current === undefined;
    shownVersion.current = w.version;
    const definition = w.definitionYaml ?? '';
    setSaved(definition);
    if (!first || proposalId === undefined) { setText(definition); return; }
    openProposal(w.projectId, proposalId).then(
      (opened) => {
        setText(opened.yaml);
        setReason(`from builder proposal ${opened.proposalId.slice(0, 8)} v${opened.version}`);
        setNotice(`Proposal version ${opened.version} is open as an unsaved change: review it, then save to make it a new version.`);
      },
      (err: unknown) => { setText(definition); setError(asApiError(err)); },
    );
  }, [w?.version]);

  if (workflow.error) return <><PageHeader title="Edit workflow" /><ErrorNote error={workflow.error} /></>;
  if (!w || text === undefined) return <Loading what="the workflow" />;
  const dirty = text !== saved;
  const list = versions.data ?? [];
  const from = compare.from ?? list[1]?.version;
  const to = compare.to ?? list[0]?.version;

  /** Runs a change; true when the server took it. */
  const act = async (done: (result: Workflow) => string, call: () => Promise<unknown>): Promise<boolean> => {
    setError(undefined);
    setNotice('');
    setProblems([]);
    setBusy(true);
    try {
      const result = await call();
      setNotice(done(result as Workflow));
      workflow.reload();
      versions.reload();
      setCompare({});
      return true;
    } catch (err) {
      const refused = asApiError(err);
      setError(refused);
      setProblems(problemsOf(refused));
      workflow.reload();
      return false;
    } finally {
      setBusy(false);
    }
  };

  const save = () => {
    if (!w.can.edit || busy || !dirty) return;
    const canvas = canvasOf(text);
    const change: WorkflowChange = { definitionYaml: text, ...(canvas ?? {}), ...(reason.trim() ? { changeReason: reason.trim() } : {}) };
    void act((r) => `Saved as version ${r.version}.`, () => patch(`/api/workflows/${w.id}`, change)).then((ok) => { if (ok) setReason(''); });
  };

  return (
    <article aria-labelledby="page-title" class="editor-page">
      <EditorHeader w={w} me={me} dirty={dirty} />
      <ErrorNote error={error} title="Refused" />
      {notice ? <p class="note" role="status">{notice}</p> : null}

      <Workbench text={text} onText={setText} problems={problems} readOnly={!w.can.edit} onSave={save} />

      {w.can.edit ? (
        <SaveBar w={w} dirty={dirty} busy={busy} reason={reason} onReason={setReason} onSave={save}
          onDiscard={() => { setText(saved); setProblems([]); }}
          onPublish={() => act((r) => `Published: version ${r.version} is live.`, () => patch(`/api/workflows/${w.id}`, { status: 'published', changeReason: 'published from the editor' } satisfies WorkflowChange))} />
      ) : null}

      <VersionsTable w={w} me={me} versions={versions} from={from} to={to} onCompare={setCompare}
        act={async (done, call) => { await act(() => done, call); }} />
      {from !== undefined && to !== undefined && from !== to ? <VersionDiff workflowId={w.id} from={from} to={to} /> : null}
    </article>
  );
}

/** Save (with its reason), discard, and publish the saved version; what each does to a live workflow is said beside it. */
function SaveBar({ w, dirty, busy, reason, onReason, onSave, onDiscard, onPublish }: {
  w: Workflow; dirty: boolean; busy: boolean; reason: string; onReason: (reason: string) => void;
  onSave: () => void; onDiscard: () => void; onPublish: () => void;
}) {
  const mayPublish = w.can.publish && w.publishedVersion !== w.version;
  return (
    <form class="editor-actions" onSubmit={(e) => { e.preventDefault(); onSave(); }}>
      <label class="editor-reason">Why (saved with the version)
        <input value={reason} maxLength={2000} onInput={(e) => onReason(e.currentTarget.value)} />
      </label>
      <div class="buttons">
        <button type="submit" disabled={busy || !dirty}>Save version</button>
        {dirty ? <button type="button" class="button-quiet" onClick={onDiscard}>Discard changes</button> : null}
        {mayPublish ? (
          <button type="button" class="button-quiet" disabled={busy || dirty} title={dirty ? 'Save first: publishing makes the saved version live' : undefined} onClick={onPublish}>
            Publish v{w.version}
          </button>
        ) : null}
      </div>
      {dirty && mayPublish ? <p class="muted small">Save first: publishing makes the saved version live.</p> : null}
      {w.status === 'published' ? <p class="muted small">This workflow is published: a saved version is live at once (runs already started keep their version).</p> : null}
    </form>
  );
}

/** The workflow's name, status and links, and which version is saved and which is live. */
function EditorHeader({ w, me, dirty }: { w: Workflow; me: Me; dirty: boolean }) {
  return (
    <>
      <PageHeader title={`Edit ${w.name}`}>
        <Status value={w.status} />
        <a class="button-link button-quiet" href={`/workflows/${w.id}`}>Runs and schedule</a>
        {w.can.edit ? <a class="button-link button-quiet" href={`/workflows/builder?project=${encodeURIComponent(w.projectId)}&workflow=${encodeURIComponent(w.id)}`}>Redraft with the builder</a> : null}
      </PageHeader>
      <p class="muted">
        In {projectName(me, w.projectId)} · saved version {w.version}{w.publishedVersion != null ? ` · live version ${w.publishedVersion}` : ' · not published'}
        {dirty ? <strong class="dirty" data-unsaved=""> · unsaved changes</strong> : null}
      </p>
    </>
  );
}
