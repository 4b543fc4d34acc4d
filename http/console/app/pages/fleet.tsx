import { useEffect, useRef } from 'preact/hooks';
import type { FleetStats, FleetWorkerList } from '../api-types.js';
import { useApi, useEventStream, useInterval } from '../data.js';
import { Empty, ErrorNote, Live, Loading, money, PageHeader, Status, Time } from '../ui/bits.js';
import { ProjectQueueSection, WorkerControls } from './queue-controls.js';

/** Workers and the queue, refreshed every few seconds and whenever a session changes status. */
export function Fleet() {
  const stats = useApi<FleetStats>('/api/fleet/stats');
  const workers = useApi<FleetWorkerList>('/api/fleet/workers');
  const refresh = () => { stats.reload(); workers.reload(); };
  useInterval(refresh, 5000);
  const soon = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(soon.current), []);
  const { connected } = useEventStream('/api/sessions/events', {
    'session.status': () => { soon.current ??= setTimeout(() => { soon.current = undefined; refresh(); }, 500); },
  });
  const s = stats.data;
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Fleet"><Live connected={connected} /></PageHeader>
      <ErrorNote error={stats.error ?? workers.error} title="The fleet could not be read" />
      {s ? (
        <div class="tiles">
          <div class="tile"><span class="tile-value" data-live-workers>{s.workers.live}</span><span class="tile-label">live workers of {s.workers.registered}</span></div>
          <div class="tile"><span class="tile-value">{s.capacity.inUse} / {s.capacity.total}</span><span class="tile-label">sessions running / capacity</span></div>
          <div class="tile"><span class="tile-value" data-queue-depth>{s.queue.depth}</span><span class="tile-label">queued{s.queue.oldestPendingAt ? <>, oldest <Time at={s.queue.oldestPendingAt} /></> : ''}</span></div>
          <div class="tile"><span class="tile-value">{money(s.quota.costUsd)}</span><span class="tile-label">{s.quota.sessions} sessions in {s.quota.period}</span></div>
        </div>
      ) : !stats.error ? <Loading what="fleet statistics" /> : null}
      <ProjectQueueSection />
      <h2>Workers</h2>
      {!workers.data ? (workers.error ? null : <Loading what="workers" />) : workers.data.workers.length === 0 ? (
        <Empty title="No worker has registered yet.">
          <p>Create a registration token (<code>POST /api/org/ORG/registration-tokens</code>, admins and owners), then run on each machine that should run agents:</p>
          <pre><code>npx troupe worker --url {location.origin} --registration-token TOKEN --agent-command 'CMD'</code></pre>
        </Empty>
      ) : (
        <div class="table-wrap" tabIndex={0}>
          <table class="list">
            <caption class="sr-only">Workers, latest heartbeat first</caption>
            <thead><tr><th scope="col">Worker</th><th scope="col">State</th><th scope="col">Load</th><th scope="col">Last heartbeat</th><th scope="col">Projects</th><th scope="col"><span class="sr-only">Controls</span></th></tr></thead>
            <tbody>
              {workers.data.workers.map((w) => (
                <tr key={w.id} data-worker={w.id}>
                  <td>{w.hostname}<span class="row-title"><code>{w.id.slice(0, 8)}</code></span></td>
                  <td><Status value={w.live ? 'live' : 'silent'} />{w.paused ? <> <span data-worker-paused><Status value="paused" /></span></> : null}</td>
                  <td><meter min={0} max={w.maxAgents} value={w.activeSessions} aria-label={`${w.activeSessions} of ${w.maxAgents} slots in use`} /> {w.activeSessions} / {w.maxAgents}</td>
                  <td><Time at={w.lastSeenAt} /></td>
                  <td>{w.projects.map((p) => p.name ?? p.id?.slice(0, 8)).join(', ') || '—'}</td>
                  <td><WorkerControls worker={w} onChanged={refresh} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
