import type { Deps } from '../../actors/services/deps.js';
import { budgetView, setProjectBudget, type Budget } from '../../storage/budgets/budgets.js';
import { projectBudgetBody, projectBudgetReply } from '../../schemas/budgets/http.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import { onOwnProject } from './own-project.js';
import type { Route } from '../types.js';

/**
 * A project's budget (issue 35 §2, decision 0080). Setting it is the org's call, not the project's: Cedar
 * `manage-org` on the Project (org admins and owners, admin-scoped keys); project admins, members and viewers get
 * 403. Its readers see it with the month's spend. Another org's project is 404.
 */

const PUT_DESCRIPTION = 'Members absent from the body keep their value; `null` clears one; clearing both removes the budget. '
  + 'A change is audited (`project.budget.changed`, with the budget before and after); setting what is set changes nothing. '
  + 'Dispatch into a project whose month-to-date spend is at or over `monthlyUsd` answers 409 `BUDGET_EXCEEDED` with '
  + '`details: {spentUsd, limitUsd}` (so does a workflow agent step, which fails with that reason); a running session whose '
  + 'reported cost passes `perSessionUsd` is stopped, and its detail shows `stopReason: "budget"`.';

export function budgetRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'put', path: '/api/projects/:projectId/budget', auth: 'org', tags: ['budgets'],
      summary: "Set the project's monthly and per-session budgets in USD (org admins and owners)",
      description: PUT_DESCRIPTION,
      bodySchema: projectBudgetBody,
      responseSchema: projectBudgetReply,
      authorize: onOwnProject('manage-org'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const at = new Date(deps.clock.now());
        const by = requesterOf(p);
        const change: Partial<Budget> = req.body;
        await setProjectBudget(deps.db, p.orgId, projectId, change, by, at, (before, after) => (trx) => deps.services.audit.record({
          orgId: p.orgId, type: 'project.budget.changed', actor: by, subject: projectId, payload: { projectId, before, after }, at,
        }, trx));
        return { body: await budgetView(deps.db, p.orgId, projectId, at.getTime()) };
      },
    }),
    route({
      method: 'get', path: '/api/projects/:projectId/budget', auth: 'org', tags: ['budgets'],
      summary: "The project's budgets and its spend this UTC month (project readers)",
      responseSchema: projectBudgetReply,
      authorize: onOwnProject('read'),
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        return { body: await budgetView(deps.db, p.orgId, projectId, deps.clock.now()) };
      },
    }),
  ];
}
