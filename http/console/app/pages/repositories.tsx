import { useEffect, useState } from 'preact/hooks';
import { del, post, type ApiError } from '../api.js';
import type { NewRepository, Repository, RepositoryList } from '../api-types.js';
import { asApiError, useApi, type Loaded } from '../data.js';
import { useMe } from '../me.js';
import { ErrorNote, Loading } from '../ui/bits.js';

export const repositoriesPath = (projectId: string) => `/api/projects/${encodeURIComponent(projectId)}/repositories`;

/**
 * The project's repositories, read again whenever `revision` moves: the section that adds or removes one bumps it, so
 * the dispatch form beside it offers the new list without a reload of the page.
 */
export function useRepositories(projectId: string | undefined, revision: number): Loaded<RepositoryList> {
  const list = useApi<RepositoryList>(projectId ? repositoriesPath(projectId) : undefined);
  useEffect(() => { if (revision > 0) list.reload(); }, [revision]);
  return list;
}

/**
 * What a project's sessions may run on: the list, and for those whose role may change it, an add form and a Remove
 * per repository. The server decides in the end (a project role can narrow the org role); its refusal is shown.
 */
export function RepositoriesSection({ revision, onChanged }: { revision: number; onChanged: () => void }) {
  const me = useMe();
  const [projectId, setProjectId] = useState(me.projects[0]?.id ?? '');
  const list = useRepositories(projectId || undefined, revision);
  const [refusal, setRefusal] = useState<ApiError | undefined>(undefined);
  if (me.projects.length === 0) return null;
  const mayEdit = me.role !== 'viewer';
  const remove = async (repository: Repository) => {
    setRefusal(undefined);
    try {
      await del(`${repositoriesPath(projectId)}/${encodeURIComponent(repository.id)}`);
      onChanged();
    } catch (err) {
      setRefusal(asApiError(err));
    }
  };
  const repositories = list.data?.repositories ?? [];

  return (
    <section class="card stack" aria-labelledby="repositories-title">
      <h2 id="repositories-title">Repositories</h2>
      <p class="muted small">A dispatch may name one of these: its worker checks the ref out in a worktree of its own and pushes the branch it commits to.</p>
      {me.projects.length > 1 ? (
        <label class="inline-form">Project
          <select value={projectId} onChange={(e) => { setProjectId((e.target as HTMLSelectElement).value); setRefusal(undefined); }}>
            {me.projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
      ) : null}
      <ErrorNote error={list.error} title="Repositories could not be loaded" />
      {list.loading && !list.data ? <Loading what="repositories" /> : repositories.length === 0 && !list.error ? (
        <p class="muted">No repositories yet.</p>
      ) : (
        <ul class="plain repositories">
          {repositories.map((r) => (
            <li key={r.id} data-repository={r.id}>
              <strong>{r.name}</strong> <code>{r.url}</code> <span class="muted">default branch <code>{r.defaultBranch}</code></span>
              {mayEdit ? <> <button type="button" class="button-quiet" aria-label={`Remove ${r.name}`} onClick={() => remove(r)}>Remove</button></> : null}
            </li>
          ))}
        </ul>
      )}
      <ErrorNote error={refusal} title="Not removed" />
      {mayEdit ? <AddRepositoryForm projectId={projectId} onAdded={onChanged} /> : null}
    </section>
  );
}

function AddRepositoryForm({ projectId, onAdded }: { projectId: string; onAdded: () => void }) {
  const [fields, setFields] = useState({ url: '', name: '', defaultBranch: '' });
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [added, setAdded] = useState('');
  const [busy, setBusy] = useState(false);
  const field = (key: keyof typeof fields) => ({
    value: fields[key],
    onInput: (e: Event) => setFields((f) => ({ ...f, [key]: (e.target as HTMLInputElement).value })),
  });
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setAdded('');
    // Blank optional fields are left out: the server then takes the name from the URL and `main` as the branch.
    const body: NewRepository = {
      url: fields.url.trim(),
      ...(fields.name.trim() ? { name: fields.name.trim() } : {}),
      ...(fields.defaultBranch.trim() ? { defaultBranch: fields.defaultBranch.trim() } : {}),
    };
    try {
      const repository = await post<Repository>(repositoriesPath(projectId), body);
      setFields({ url: '', name: '', defaultBranch: '' });
      setAdded(repository.name);
      onAdded();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="stack add-repository" onSubmit={submit} aria-labelledby="add-repository-title">
      <h3 id="add-repository-title">Add a repository</h3>
      <label for="repository-url">URL</label>
      <input id="repository-url" type="text" required placeholder="the https or ssh address git clones" autoComplete="off" spellcheck={false} {...field('url')} />
      <label for="repository-name">Name (optional)</label>
      <input id="repository-name" type="text" placeholder="from the URL" autoComplete="off" {...field('name')} />
      <label for="repository-branch">Default branch (optional)</label>
      <input id="repository-branch" type="text" placeholder="main" autoComplete="off" spellcheck={false} {...field('defaultBranch')} />
      <ErrorNote error={error} title="Not added" />
      {added ? <p class="note" role="status">Added {added}.</p> : null}
      <button type="submit" disabled={busy}>{busy ? 'Adding…' : 'Add repository'}</button>
    </form>
  );
}
