import type { FunctionComponent } from 'preact';
import { Sessions } from './sessions.js';
import { SessionPage } from './session.js';
import { BuilderRoute, EditWorkflowRoute, NewWorkflowRoute } from './workflow-editor/index.js';
import { lazyPage } from './lazy.js';

// The sessions list (the console's home) and a session's page (where it leads) come with the first load; the other
// pages are fetched when first opened, so the script the first screen waits for carries none of them.
const Fleet = lazyPage('Fleet', 'the page', () => import('./fleet.js').then((m) => m.Fleet));
const Approvals = lazyPage<{ id?: string }>('Approvals', 'the page', () => import('./approvals.js').then((m) => m.Approvals));
const Workflows = lazyPage('Workflows', 'the page', () => import('./workflows.js').then((m) => m.Workflows));
const WorkflowPage = lazyPage<{ id: string }>('Workflow', 'the page', () => import('./workflow.js').then((m) => m.WorkflowPage));
const Policies = lazyPage('Policies', 'the page', () => import('./policies.js').then((m) => m.Policies));
const PolicyPage = lazyPage<{ id: string }>('Policy', 'the page', () => import('./policy.js').then((m) => m.PolicyPage));
const Incidents = lazyPage('Incidents', 'the page', () => import('./incidents.js').then((m) => m.Incidents));
const Audit = lazyPage('Audit', 'the page', () => import('./audit.js').then((m) => m.Audit));
const MembersPage = lazyPage('Members', 'the page', () => import('./admin/members.js').then((m) => m.MembersPage));
const ApiKeysPage = lazyPage('API keys', 'the page', () => import('./admin/api-keys.js').then((m) => m.ApiKeysPage));
const RegistrationTokensPage = lazyPage('Registration tokens', 'the page', () => import('./admin/registration-tokens.js').then((m) => m.RegistrationTokensPage));
const IntegrationsPage = lazyPage('Integrations', 'the page', () => import('./admin/integrations.js').then((m) => m.IntegrationsPage));
const BudgetsPage = lazyPage('Budgets', 'the page', () => import('./admin/budgets.js').then((m) => m.BudgetsPage));

/** Every signed-in page: its path (the node serves the same paths, see http/console/routes.ts) and nav section. */
export const pages: readonly { path: string; section: string; component: FunctionComponent<any> }[] = [
  { path: '/', section: 'sessions', component: Sessions },
  { path: '/sessions', section: 'sessions', component: Sessions },
  { path: '/sessions/:id', section: 'sessions', component: SessionPage },
  { path: '/fleet', section: 'fleet', component: Fleet },
  { path: '/approvals', section: 'approvals', component: Approvals },
  { path: '/approvals/:id', section: 'approvals', component: Approvals },
  { path: '/workflows', section: 'workflows', component: Workflows },
  // Before `/workflows/:id`: the first pattern that matches wins.
  { path: '/workflows/new', section: 'workflows', component: NewWorkflowRoute },
  { path: '/workflows/builder', section: 'workflows', component: BuilderRoute },
  { path: '/workflows/:id', section: 'workflows', component: WorkflowPage },
  { path: '/workflows/:id/edit', section: 'workflows', component: EditWorkflowRoute },
  { path: '/policies', section: 'policies', component: Policies },
  { path: '/policies/:id', section: 'policies', component: PolicyPage },
  { path: '/incidents', section: 'incidents', component: Incidents },
  { path: '/audit', section: 'audit', component: Audit },
  { path: '/settings', section: 'settings', component: MembersPage },
  { path: '/settings/members', section: 'settings', component: MembersPage },
  { path: '/settings/api-keys', section: 'settings', component: ApiKeysPage },
  { path: '/settings/registration-tokens', section: 'settings', component: RegistrationTokensPage },
  { path: '/settings/integrations', section: 'settings', component: IntegrationsPage },
  { path: '/settings/budgets', section: 'settings', component: BudgetsPage },
];
