import { useState } from 'preact/hooks';
import { post, type ApiError } from '../api.js';
import { asApiError } from '../data.js';
import { useMe } from '../me.js';
import { ErrorNote } from '../ui/bits.js';

/** Dispatches a session in one of the person's projects; the server decides whether they may. */
export function DispatchForm({ onDispatched }: { onDispatched: (sessionId: string) => void }) {
  const me = useMe();
  const [projectId, setProjectId] = useState(me.projects[0]?.id ?? '');
  const [prompt, setPrompt] = useState('');
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  if (me.role === 'viewer' || me.projects.length === 0) return null;
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const reply = await post<{ sessionId: string }>('/api/agent-dispatch', { projectId, prompt });
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
      <select id="dispatch-project" value={projectId} onChange={(e) => setProjectId((e.target as HTMLSelectElement).value)}>
        {me.projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
      </select>
      <label for="dispatch-prompt">Prompt</label>
      <textarea id="dispatch-prompt" rows={3} required value={prompt} onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)} />
      <ErrorNote error={error} title="Not dispatched" />
      <button type="submit" disabled={busy}>{busy ? 'Dispatching…' : 'Dispatch'}</button>
    </form>
  );
}
