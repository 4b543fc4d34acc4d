import { useState } from 'preact/hooks';
import { patch, post, type ApiError } from '../api.js';
import type { Workflow, WorkflowChange, WorkflowRunList, WorkflowVersionList } from '../api-types.js';
import { asApiError, useApi, type Loaded } from '../data.js';
import { actorName, projectName, useMe, type Me } from '../me.js';
import { Empty, ErrorNote, Loading, PageHeader, Status, Time } from '../ui/bits.js';
import { VersionDiff } from './version-diff.js';
import { ScheduleSection } from './queue-controls.js';

const liveVersionOf = (w: Workflow): number | null => w.publishedVersion ?? null;

/**
 * A workflow: its versions newest first (pick two to compare), rollback to any version (a new version on top),
 * publish for those allowed, and its runs with the version each is pinned to. Refusals show the server's words.
 */
export function WorkflowPage({ id }: { id: string }) {
  const me = useMe();
  const workflow = useApi<Workflow>(`/api/workflows/${encodeURIComponent(id)}`);
  const versions = useApi<WorkflowVersionList>(`/api/workflows/${encodeURIComponent(id)}/versions`);
  const runs = useApi<WorkflowRunList>(`/api/workflows/${encodeURIComponent(id)}/runs`);
  const [compare, setCompare] = useState<{ from?: number; to?: number }>({});
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [notice, setNotice] = useState('');
  if (workflow.error) return <><PageHeader title="Workflow" /><ErrorNote error={workflow.error} /></>;
  const w = workflow.data;
  if (!w) return <Loading what="the workflow" />;
  const liveVersion = liveVersionOf(w);
  const list = versions.data ?? [];
  const from = compare.from ?? list[1]?.version;
  const to = compare.to ?? list[0]?.version;

  const act = async (done: string, call: () => Promise<unknown>) => {
    setError(undefined);
    setNotice('');
    try {
      await call();
      setNotice(done);
      workflow.reload();
      versions.reload();
      runs.reload();
      setCompare({});
    } catch (err) {
      setError(asApiError(err));
      // A refusal can mean the page was out of date (a role changed): re-read what the server now allows.
      workflow.reload();
    }
  };

  return (
    <article aria-labelledby="page-title">
      <PageHeader title={w.name}>
        <Status value={w.status} />
        <a class="button-link" href={`/workflows/${w.id}/edit`}>{w.can.edit ? 'Edit definition' : 'View definition'}</a>
        {w.can.publish && w.status !== 'published' ? (
          <button type="button" onClick={() => act('Published.', () => patch(`/api/workflows/${w.id}`, { status: 'published', changeReason: 'published from the console' } satisfies WorkflowChange))}>Publish</button>
        ) : null}
        {w.can.run && liveVersion !== null ? (
          <button type="button" class="button-quiet" onClick={() => act('Run started.', () => post(`/api/workflows/${w.id}/runs`, {}))}>Start a run</button>
        ) : null}
      </PageHeader>
      <p class="muted">In {projectName(me, w.projectId)} · current version {w.version}{liveVersion !== null ? ` · live version ${liveVersion}` : ' · not published'}</p>
      <ErrorNote error={error} title="Refused" />
      {notice ? <p class="note" role="status">{notice}</p> : null}

      <ScheduleSection workflowId={w.id} mayControl={w.can.publish} />

      <VersionsTable w={w} me={me} versions={versions} from={from} to={to} onCompare={setCompare} act={act} />

      {from !== undefined && to !== undefined && from !== to ? <VersionDiff workflowId={w.id} from={from} to={to} /> : null}

      <RunsSection w={w} me={me} runs={runs} />
    </article>
  );
}

export type Act = (done: string, call: () => Promise<unknown>) => Promise<void>;

/** The versions, newest first: two picked to compare, and a rollback to any but the current one for editors (also on the editor page). */
export function VersionsTable({ w, me, versions, from, to, onCompare, act }: {
  w: Workflow; me: Me; versions: Loaded<WorkflowVersionList>; from: number | undefined; to: number | undefined;
  onCompare: (pick: { from?: number; to?: number }) => void; act: Act;
}) {
  const list = versions.data ?? [];
  return (
  <section aria-labelledby="versions-title">
    <h2 id="versions-title">Versions</h2>
    <ErrorNote error={versions.error} />
    {list.length === 0 ? (versions.error ? null : <Loading what="versions" />) : (
      <div class="table-wrap" tabIndex={0}>
        <table class="list versions">
          <caption class="sr-only">Versions, newest first</caption>
          <thead><tr><th scope="col">Version</th><th scope="col">Compare</th><th scope="col">Changed by</th><th scope="col">Reason</th><th scope="col">When</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {list.map((v) => (
              <tr key={v.version} data-version={v.version}>
                <td>v{v.version}{v.version === w.publishedVersion ? <span class="muted"> (live)</span> : null}</td>
                <td class="compare">
                  <label><input type="radio" name="from" checked={from === v.version} onChange={() => onCompare({ from: v.version, to })} /> <span class="sr-only">Compare from v{v.version}</span>from</label>
                  <label><input type="radio" name="to" checked={to === v.version} onChange={() => onCompare({ from, to: v.version })} /> <span class="sr-only">Compare to v{v.version}</span>to</label>
                </td>
                <td>{actorName(me, v.changedBy)}</td>
                <td>{v.changeReason ?? <span class="muted">—</span>}</td>
                <td><Time at={v.createdAt} /></td>
                <td>{w.can.edit && v.version !== w.version ? (
                  <button type="button" class="button-quiet" aria-label={`Roll back to version ${v.version}`}
                    onClick={() => act(`Rolled back: version ${v.version}'s content is now the newest version.`, () => post(`/api/workflows/${w.id}/versions/${v.version}/rollback`))}>
                    Roll back
                  </button>
                ) : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )}
  </section>
  );
}

/** The workflow's runs, newest first, with the version each is pinned to. */
function RunsSection({ w, me, runs }: { w: Workflow; me: Me; runs: Loaded<WorkflowRunList> }) {
  return (
  <section aria-labelledby="runs-title">
    <h2 id="runs-title">Runs</h2>
    <ErrorNote error={runs.error} />
    {!runs.data ? (runs.error ? null : <Loading what="runs" />) : runs.data.runs.length === 0 ? (
      <Empty title="No runs yet.">{liveVersionOf(w) === null ? <p>Publish a version first; runs start on the live version.</p> : <p>Start one above or with <code>POST /api/workflows/{w.id}/runs</code>.</p>}</Empty>
    ) : (
      <div class="table-wrap" tabIndex={0}>
        <table class="list">
          <caption class="sr-only">Runs, newest first</caption>
          <thead><tr><th scope="col">Run</th><th scope="col">Pinned version</th><th scope="col">Status</th><th scope="col">Started</th></tr></thead>
          <tbody>
            {runs.data.runs.map((r) => (
              <tr key={r.runId} data-run={r.runId}>
                <td><code>{r.runId.slice(0, 8)}</code> <span class="row-title">by {actorName(me, r.startedBy)}</span></td>
                <td>v{r.version}</td>
                <td><Status value={r.status} /></td>
                <td><Time at={r.createdAt} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )}
  </section>
  );
}
