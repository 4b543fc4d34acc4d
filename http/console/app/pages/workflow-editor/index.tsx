import { lazyPage } from '../lazy.js';
import './editor.css';

/**
 * The authoring pages, loaded when first opened: CodeMirror, the YAML parser and the graph layout are most of their
 * weight and no other page needs them (ops/decisions/0089-workflow-editor.md). Their stylesheet is imported here, so
 * it is part of the one stylesheet the page links.
 */
export const EditWorkflowRoute = lazyPage<{ id: string }>('Edit workflow', 'the editor', () => import('./edit-workflow.js').then((m) => m.EditWorkflowPage));
export const NewWorkflowRoute = lazyPage<Record<string, never>>('New workflow', 'the editor', () => import('./new-workflow.js').then((m) => m.NewWorkflowPage));
export const BuilderRoute = lazyPage<Record<string, never>>('Workflow builder', 'the editor', () => import('../builder/builder-page.js').then((m) => m.BuilderPage));
