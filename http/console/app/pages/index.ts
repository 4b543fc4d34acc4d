import type { FunctionComponent } from 'preact';
import { Fleet } from './fleet.js';
import { Sessions } from './sessions.js';
import { SessionPage } from './session.js';
import { Approvals } from './approvals.js';
import { Workflows } from './workflows.js';
import { WorkflowPage } from './workflow.js';
import { BuilderRoute, EditWorkflowRoute, NewWorkflowRoute } from './workflow-editor/index.js';
import { Policies } from './policies.js';
import { PolicyPage } from './policy.js';
import { Incidents } from './incidents.js';
import { Audit } from './audit.js';
import { MembersPage } from './admin/members.js';
import { ApiKeysPage } from './admin/api-keys.js';
import { RegistrationTokensPage } from './admin/registration-tokens.js';
import { IntegrationsPage } from './admin/integrations.js';
import { BudgetsPage } from './admin/budgets.js';

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
