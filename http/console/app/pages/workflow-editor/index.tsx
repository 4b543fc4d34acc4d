import type { FunctionComponent } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../../api.js';
import { asApiError } from '../../data.js';
import { ErrorNote, Loading, PageHeader } from '../../ui/bits.js';
import './editor.css';

/**
 * The authoring pages, loaded when first opened: CodeMirror, the YAML parser and the graph layout are most of their
 * weight and no other page needs them, so the console's first load stays as it was (esbuild splits them into their
 * own chunks; ops/decisions/0089-workflow-editor.md). Their stylesheet is imported here, so it is part of the one
 * stylesheet the page links.
 */
function lazyPage<P extends object>(title: string, load: () => Promise<FunctionComponent<P>>): FunctionComponent<P> {
  let loaded: FunctionComponent<P> | undefined;
  return function LazyPage(props: P) {
    const [Page, setPage] = useState<FunctionComponent<P> | undefined>(() => loaded);
    const [error, setError] = useState<ApiError | undefined>(undefined);
    useEffect(() => {
      if (Page) return;
      load().then((component) => { loaded = component; setPage(() => component); }, (err: unknown) => setError(asApiError(err)));
    }, []);
    if (error) return <><PageHeader title={title} /><ErrorNote error={error} title="This page could not be loaded (reload to try again)" /></>;
    if (!Page) return <Loading what="the editor" />;
    return <Page {...props} />;
  };
}

export const EditWorkflowRoute = lazyPage<{ id: string }>('Edit workflow', () => import('./edit-workflow.js').then((m) => m.EditWorkflowPage));
export const NewWorkflowRoute = lazyPage<Record<string, never>>('New workflow', () => import('./new-workflow.js').then((m) => m.NewWorkflowPage));
export const BuilderRoute = lazyPage<Record<string, never>>('Workflow builder', () => import('../builder/builder-page.js').then((m) => m.BuilderPage));
