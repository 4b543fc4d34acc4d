import { useState } from 'preact/hooks';
import { api, post, type ApiError } from '../api.js';
import type { operations } from '../../../client/api-types.generated.js';
import { asApiError, useApi } from '../data.js';
import { actorName, useMe, type Me } from '../me.js';
import { ErrorNote, Loading, Time } from '../ui/bits.js';

/**
 * The queue controls of issue 36 (decisions 0079, 0081, 0085) as the console offers them, each through the API route
 * that already does it: a project's queue paused and resumed, its weight in the org's offer rounds and its limit per
 * concurrency key; a worker paused, resumed and drained; a workflow's schedule paused and resumed. A control shows only
 * to a role the API would let act (the server decides in the end; its refusal is shown).
 */

type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;
type ProjectQueue = JsonOf<operations['getApiProjectsProjectIdQueue']['responses'][200]>;
type ProjectConcurrency = JsonOf<operations['getApiProjectsProjectIdConcurrency']['responses'][200]>;
type Strategy = NonNullable<ProjectConcurrency['strategy']>;
type Schedule = JsonOf<operations['getApiWorkflowsIdSchedule']['responses'][200]>;

const STRATEGIES: Record<Strategy, string> = {
  queue: 'Queue: the next waits until one ends',
  'cancel-newest': 'Cancel newest: refuse a dispatch past the limit',
  'cancel-in-progress': 'Cancel in progress: stop the running one',
};

/** Org admins and owners: the org's own controls (weight, concurrency, workers). */
export const isOrgAdmin = (me: Me): boolean => me.role === 'owner' || me.role === 'admin';
/** Who may pause a project's queue: Cedar `publish` on the project (org admins and owners, project admins). */
const mayPauseProject = (me: Me, projectId: string): boolean => isOrgAdmin(me) || me.projects.find((p) => p.id === projectId)?.role === 'admin';

/** Runs one control, shows what it did or the server's refusal, and re-reads what it changed either way. */
function useAct(reload: () => void): { act: (done: string, call: () => Promise<unknown>) => Promise<void>; error: ApiError | undefined; notice: string } {
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [notice, setNotice] = useState('');
  const act = async (done: string, call: () => Promise<unknown>) => {
    setError(undefined);
    setNotice('');
    try {
      await call();
      setNotice(done);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      reload();
    }
  };
  return { act, error, notice };
}

const projectPath = (projectId: string) => `/api/projects/${encodeURIComponent(projectId)}`;

/** A project's queue: paused or not, what waits, its weight and its concurrency, with the controls the person may use. */
export function ProjectQueueSection() {
  const me = useMe();
  const [projectId, setProjectId] = useState(me.projects[0]?.id ?? '');
  const queue = useApi<ProjectQueue>(projectId ? `${projectPath(projectId)}/queue` : undefined);
  const concurrency = useApi<ProjectConcurrency>(projectId ? `${projectPath(projectId)}/concurrency` : undefined);
  const reload = () => { queue.reload(); concurrency.reload(); };
  const { act, error, notice } = useAct(reload);
  if (me.projects.length === 0) return null;
  const q = queue.data;
  return (
    <section class="card stack" aria-labelledby="queue-title" data-project-queue={projectId}>
      <h2 id="queue-title">Project queue</h2>
      {me.projects.length > 1 ? (
        <label class="inline-form">Project
          <select value={projectId} onChange={(e) => setProjectId((e.target as HTMLSelectElement).value)}>
            {me.projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
      ) : null}
      <ErrorNote error={queue.error ?? concurrency.error} title="The queue could not be read" />
      {!q ? (queue.error ? null : <Loading what="the queue" />) : (
        <>
          <p data-queue-state={q.paused ? 'paused' : 'running'}>
            {q.paused ? <><strong>Paused</strong> by {actorName(me, q.pausedBy ?? '')} <Time at={q.pausedAt} />: its sessions are offered to no worker.</> : <>Running: waiting sessions are offered to workers.</>}
            {' '}<span data-queue-pending>{q.pending}</span> waiting · weight <span data-queue-weight>{q.weight}</span>
          </p>
          {mayPauseProject(me, projectId) ? (
            q.paused
              ? <button type="button" onClick={() => act('Queue resumed.', () => post(`${projectPath(projectId)}/queue/resume`))}>Resume queue</button>
              : <button type="button" onClick={() => act('Queue paused.', () => post(`${projectPath(projectId)}/queue/pause`))}>Pause queue</button>
          ) : null}
        </>
      )}
      {concurrency.data ? (
        <p class="muted small" data-concurrency>
          {concurrency.data.configured ? <>At most {concurrency.data.defaultLimit} session(s) per concurrency key; {STRATEGIES[concurrency.data.strategy!]}.</> : <>No limit per concurrency key.</>}
        </p>
      ) : null}
      <ErrorNote error={error} title="Refused" />
      {notice ? <p class="note" role="status">{notice}</p> : null}
      {isOrgAdmin(me) && q && concurrency.data ? (
        <QueueSettings key={projectId} projectId={projectId} weight={q.weight} concurrency={concurrency.data} act={act} />
      ) : null}
    </section>
  );
}

/** The org admins' settings of a project's queue: its weight, and its limit per key with the strategy past it. */
function QueueSettings({ projectId, weight, concurrency, act }: {
  projectId: string; weight: number; concurrency: ProjectConcurrency; act: (done: string, call: () => Promise<unknown>) => Promise<void>;
}) {
  const [newWeight, setNewWeight] = useState(String(weight));
  const [limit, setLimit] = useState(String(concurrency.defaultLimit ?? 1));
  const [strategy, setStrategy] = useState<Strategy>(concurrency.strategy ?? 'queue');
  return (
    <div class="stack">
      <form class="inline-form" onSubmit={(e) => { e.preventDefault(); void act('Weight saved.', () => api('PUT', `${projectPath(projectId)}/queue`, { weight: Number(newWeight) })); }}>
        <label for="queue-weight">Weight (offers per round, 1–100)</label>
        <input id="queue-weight" type="number" min={1} max={100} step={1} required value={newWeight} onInput={(e) => setNewWeight((e.target as HTMLInputElement).value)} />
        <button type="submit">Save weight</button>
      </form>
      <form class="inline-form" onSubmit={(e) => { e.preventDefault(); void act('Concurrency saved.', () => api('PUT', `${projectPath(projectId)}/concurrency`, { defaultLimit: Number(limit), strategy })); }}>
        <label for="queue-limit">Sessions per concurrency key</label>
        <input id="queue-limit" type="number" min={1} max={1000} step={1} required value={limit} onInput={(e) => setLimit((e.target as HTMLInputElement).value)} />
        <label for="queue-strategy">Past the limit</label>
        <select id="queue-strategy" value={strategy} onChange={(e) => setStrategy((e.target as HTMLSelectElement).value as Strategy)}>
          {Object.entries(STRATEGIES).map(([value, label]) => <option key={value} value={value}>{label}</option>)}
        </select>
        <button type="submit">Save concurrency</button>
      </form>
    </div>
  );
}

/** A worker's pause, resume and drain, for org admins and owners (Cedar `enqueue-mutation` on the daemon host). */
export function WorkerControls({ worker, onChanged }: { worker: { id: string; hostname: string; paused?: boolean }; onChanged: () => void }) {
  const me = useMe();
  const { act, error, notice } = useAct(onChanged);
  if (!isOrgAdmin(me)) return null;
  const path = `/api/workers/${encodeURIComponent(worker.id)}`;
  return (
    <div class="inline-form">
      {worker.paused
        ? <button type="button" class="button-quiet" aria-label={`Resume ${worker.hostname}`} onClick={() => act('Worker resumed.', () => post(`${path}/resume`))}>Resume</button>
        : <button type="button" class="button-quiet" aria-label={`Pause ${worker.hostname}`} onClick={() => act('Worker paused.', () => post(`${path}/pause`))}>Pause</button>}
      <button type="button" class="button-quiet" aria-label={`Drain ${worker.hostname}`} onClick={() => act('Drain requested: the worker finishes its sessions and exits.', () => post(`${path}/drain`))}>Drain</button>
      <ErrorNote error={error} title="Refused" />
      {notice ? <span class="note" role="status">{notice}</span> : null}
    </div>
  );
}

/** A workflow's schedule: active or not, paused or not, and its pause and resume for those who may publish it. */
export function ScheduleSection({ workflowId, mayControl }: { workflowId: string; mayControl: boolean }) {
  const me = useMe();
  const schedule = useApi<Schedule>(`/api/workflows/${encodeURIComponent(workflowId)}/schedule`);
  const { act, error, notice } = useAct(schedule.reload);
  const s = schedule.data;
  if (!s || s.status === 'none') return null;
  const path = `/api/workflows/${encodeURIComponent(workflowId)}/schedule`;
  return (
    <section aria-labelledby="schedule-title" data-schedule-state={s.paused ? 'paused' : s.status}>
      <h2 id="schedule-title">Schedule</h2>
      <p>
        {s.paused ? <><strong>Paused</strong> by {actorName(me, s.pausedBy ?? '')} <Time at={s.pausedAt} />: its fires start no run and are recorded as skipped.</>
          : s.status === 'active' ? <>Active{s.nextFireTimes[0] ? <>, next fire <Time at={s.nextFireTimes[0]} /></> : null}.</> : <>Ended.</>}
      </p>
      {mayControl && s.status === 'active' ? (
        s.paused
          ? <button type="button" onClick={() => act('Schedule resumed.', () => post(`${path}/resume`))}>Resume schedule</button>
          : <button type="button" onClick={() => act('Schedule paused.', () => post(`${path}/pause`))}>Pause schedule</button>
      ) : null}
      <ErrorNote error={error} title="Refused" />
      {notice ? <p class="note" role="status">{notice}</p> : null}
    </section>
  );
}
