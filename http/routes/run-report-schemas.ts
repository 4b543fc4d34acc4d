/**
 * The members a worker's status report may carry about its run (issue 34, decision 0076) and how the session detail
 * shows them: the protocol's shapes, strict (an unknown member is a 400 that changes nothing).
 */
const sha = { type: 'string', pattern: '^[0-9a-f]{40}$' } as const;
const count = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;

export const agentReport = {
  type: 'object', additionalProperties: false, required: ['preset'],
  description: 'The agent that ran this run: its preset, and the id of its own conversation (to resume it in a follow-up)',
  properties: {
    preset: { type: 'string', minLength: 1, maxLength: 40 },
    agentSessionId: { type: 'string', minLength: 1, maxLength: 200 },
  },
} as const;

export const usageReport = {
  type: 'object', additionalProperties: false, required: ['inputTokens', 'outputTokens'],
  description: 'Tokens and cost of the run so far; `costUsd` is also the cost of the report when it has no `costUsd` of its own',
  properties: {
    inputTokens: count, outputTokens: count,
    costUsd: { type: 'number', minimum: 0, maximum: 1e9 },
  },
} as const;

export const workspaceReport = {
  type: 'object', additionalProperties: false,
  required: ['repository', 'branch', 'baseCommit', 'headCommit', 'commits', 'filesChanged', 'insertions', 'deletions', 'dirty', 'pushed'],
  description: "The run's git workspace when the agent exited: its branch, the commits it made (`base..head`, newest first), "
    + 'the diffstat, whether uncommitted changes were left, and whether the branch was pushed to the origin',
  properties: {
    repository: { type: 'string', minLength: 1, maxLength: 100, description: "The project repository's id" },
    branch: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001f\\u007f ~^:?*\\[\\\\]+$' },
    baseCommit: sha, headCommit: sha,
    commits: {
      type: 'array', maxItems: 100,
      items: {
        type: 'object', additionalProperties: false, required: ['sha', 'subject'],
        properties: { sha, subject: { type: 'string', maxLength: 300 } },
      },
    },
    filesChanged: count, insertions: count, deletions: count,
    dirty: { type: 'boolean' }, pushed: { type: 'boolean' },
    pushError: { type: 'string', maxLength: 2000, description: "git's message when the push failed" },
  },
} as const;

/** The status report's optional members (`POST /api/sessions/{id}/status`). */
export const runReportMembers = { agent: agentReport, usage: usageReport, workspace: workspaceReport } as const;

const nullable = <S extends { type: string }>(schema: S) => ({ ...schema, type: [schema.type, 'null'] }) as const;

/** What the session detail shows of the current run's reports and its pull request. */
export const runReportDetail = {
  agent: {
    type: ['object', 'null'], required: ['preset', 'agentSessionId'],
    description: 'The agent that ran the current run, as its worker reported it (null until reported)',
    properties: { preset: { type: 'string' }, agentSessionId: { type: ['string', 'null'] } },
  },
  usage: {
    type: ['object', 'null'], required: ['inputTokens', 'outputTokens', 'costUsd'],
    description: "The current run's tokens and cost, as its worker last reported them (null until reported)",
    properties: { inputTokens: { type: 'integer' }, outputTokens: { type: 'integer' }, costUsd: { type: ['number', 'null'] } },
  },
  workspace: { ...nullable(workspaceReport), description: "The current run's git workspace, as its worker reported it (null until reported)" },
  pullRequest: {
    type: ['object', 'null'], required: ['number', 'url'],
    description: 'The pull request the current run opened on GitHub (null when none was opened)',
    properties: { number: { type: 'integer' }, url: { type: 'string' } },
  },
  pullRequestDelivery: {
    type: ['object', 'null'], required: ['status', 'repository', 'head', 'base', 'attempts', 'lastError'],
    description: 'Whether a pull request is owed for the current run and what became of it: `pending` (being opened), '
      + '`opened`, `failed` (given up, with the reason) or `skipped` (none applies: no GitHub connection, not a GitHub '
      + 'repository, with the reason). Null when the run completed no pushed commits, or has not completed.',
    properties: {
      status: { enum: ['pending', 'opened', 'failed', 'skipped'] },
      repository: { type: ['string', 'null'], description: '`owner/repo` on GitHub' },
      head: { type: ['string', 'null'] }, base: { type: ['string', 'null'] },
      attempts: { type: 'integer' }, lastError: { type: ['string', 'null'] },
    },
  },
} as const;
