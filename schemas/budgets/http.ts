/**
 * Project budgets (issue 35 §2, decision 0080): the body of `PUT /api/projects/{projectId}/budget` and the reply of it
 * and of `GET`. Amounts are US dollars, the unit workers report cost in.
 */

/** A bound that no real budget reaches, so a typo of many digits is refused rather than stored as "no limit". */
export const MAX_BUDGET_USD = 1_000_000_000;

const limit = (what: string) => ({
  type: ['number', 'null'], minimum: 0, maximum: MAX_BUDGET_USD,
  description: `${what} in USD, 0 to ${MAX_BUDGET_USD}; null clears it; absent keeps it as it is`,
}) as const;

export const projectBudgetBody = {
  type: 'object', additionalProperties: false, minProperties: 1,
  properties: {
    monthlyUsd: limit("The project's spend per UTC month at or over which dispatch is refused (409 BUDGET_EXCEEDED)"),
    perSessionUsd: limit('The cumulative cost past which a running session is stopped by the server (`stopReason: "budget"`)'),
  },
} as const;

export const projectBudgetReply = {
  type: 'object',
  required: ['projectId', 'monthlyUsd', 'perSessionUsd', 'spentThisMonthUsd', 'monthStartsAt'],
  properties: {
    projectId: { type: 'string', format: 'uuid' },
    monthlyUsd: { type: ['number', 'null'], description: 'The monthly budget in USD; null for none' },
    perSessionUsd: { type: ['number', 'null'], description: 'The per-session budget in USD; null for none' },
    spentThisMonthUsd: {
      type: 'number', minimum: 0,
      description: "The cost of the project's sessions this UTC month: each counted once, in the month it ended (a live one: of its latest report)",
    },
    monthStartsAt: { type: 'string', format: 'date-time', description: 'The start of the current UTC month' },
  },
} as const;

/** The 409 of a dispatch into a project whose month-to-date spend reached its monthly budget. */
export const budgetExceededError = {
  description: "BUDGET_EXCEEDED: the project's month-to-date spend is at or over its monthly budget; nothing was created "
    + '(`details.spentUsd`, `details.limitUsd`). Dispatch succeeds again once the budget is raised or cleared, or a UTC month begins.',
  schema: {
    type: 'object', required: ['error', 'code', 'details'],
    properties: {
      error: { type: 'string' }, code: { type: 'string', const: 'BUDGET_EXCEEDED' },
      details: { type: 'object', required: ['spentUsd', 'limitUsd'], properties: { spentUsd: { type: 'number' }, limitUsd: { type: 'number' } } },
    },
  },
} as const;
