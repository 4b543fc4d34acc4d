import { useState } from 'preact/hooks';
import { post, type ApiError } from '../api.js';
import { AGENT_PRESETS, type AgentPreset, type DispatchRequest, type Dispatched } from '../api-types.js';
import { asApiError } from '../data.js';
import { useMe } from '../me.js';
import { ErrorNote } from '../ui/bits.js';
import { useRepositories } from './repositories.js';

/**
 * Dispatches a session in one of the person's projects, optionally on one of its repositories at a ref and with an
 * agent preset; the server decides whether they may, and whether the ref is one. `repositoriesRevision` moves when
 * the project's repositories change beside the form.
 */
export function DispatchForm({ onDispatched, repositoriesRevision }: { onDispatched: (sessionId: string) => void; repositoriesRevision: number }) {
  const me = useMe();
  const [projectId, setProjectId] = useState(me.projects[0]?.id ?? '');
  const [prompt, setPrompt] = useState('');
  const [code, setCode] = useState<{ repository: string; ref: string; agent: AgentPreset | '' }>({ repository: '', ref: '', agent: '' });
  // 5 is the server's default: sent only when the person chose another (decision 0081).
  const [priority, setPriority] = useState(5);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const repositories = useRepositories(me.role !== 'viewer' && projectId ? projectId : undefined, repositoriesRevision).data?.repositories ?? [];
  if (me.role === 'viewer' || me.projects.length === 0) return null;
  const chosen = repositories.find((r) => r.id === code.repository);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    // Only what the person chose is sent: an absent member means the server's (or the worker's) default.
    const body: DispatchRequest = {
      projectId, prompt,
      ...(chosen ? { repository: chosen.id } : {}),
      ...(chosen && code.ref.trim() ? { ref: code.ref.trim() } : {}),
      ...(code.agent ? { agent: code.agent } : {}),
      ...(priority !== 5 ? { priority } : {}),
    };
    try {
      const reply = await post<Dispatched>('/api/agent-dispatch', body);
      setPrompt('');
      onDispatched(reply.sessionId);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card stack" onSubmit={submit} aria-labelledby="dispatch-title">
      <h2 id="dispatch-title">Dispatch a session</h2>
      <label for="dispatch-project">Project</label>
      <select id="dispatch-project" value={projectId} onChange={(e) => { setProjectId((e.target as HTMLSelectElement).value); setCode((c) => ({ ...c, repository: '', ref: '' })); }}>
        {me.projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
      </select>
      <label for="dispatch-prompt">Prompt</label>
      <textarea id="dispatch-prompt" rows={3} required value={prompt} onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)} />
      <label for="dispatch-repository">Repository (optional)</label>
      <select id="dispatch-repository" value={chosen?.id ?? ''} onChange={(e) => setCode((c) => ({ ...c, repository: (e.target as HTMLSelectElement).value }))}>
        <option value="">None: the worker's own directory</option>
        {repositories.map((r) => <option key={r.id} value={r.id}>{r.name}</option>)}
      </select>
      <label for="dispatch-ref">Branch, tag or commit (optional)</label>
      <input
        id="dispatch-ref" type="text" autoComplete="off" spellcheck={false} disabled={!chosen}
        placeholder={chosen ? chosen.defaultBranch : 'choose a repository first'}
        value={code.ref} onInput={(e) => setCode((c) => ({ ...c, ref: (e.target as HTMLInputElement).value }))}
      />
      <label for="dispatch-agent">Agent (optional)</label>
      <select id="dispatch-agent" value={code.agent} onChange={(e) => setCode((c) => ({ ...c, agent: (e.target as HTMLSelectElement).value as AgentPreset | '' }))}>
        <option value="">The worker's own (its --agent)</option>
        {Object.entries(AGENT_PRESETS).map(([preset, label]) => <option key={preset} value={preset}>{label}</option>)}
      </select>
      <label for="dispatch-priority">Priority (within the project, higher first)</label>
      <select id="dispatch-priority" value={String(priority)} onChange={(e) => setPriority(Number((e.target as HTMLSelectElement).value))}>
        {[9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map((p) => <option key={p} value={String(p)}>{p === 9 ? '9 (highest)' : p === 5 ? '5 (default)' : p === 0 ? '0 (lowest)' : String(p)}</option>)}
      </select>
      <ErrorNote error={error} title="Not dispatched" />
      <button type="submit" disabled={busy}>{busy ? 'Dispatching…' : 'Dispatch'}</button>
    </form>
  );
}
