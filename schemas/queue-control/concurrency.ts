/**
 * Priorities and concurrency keys (issue 36, decision 0081): what a dispatch may name, and a project's concurrency
 * setting as `PUT`/`GET /api/projects/{projectId}/concurrency` take and answer it.
 */

export const concurrencyStrategies = ['queue', 'cancel-newest', 'cancel-in-progress'] as const;
export type ConcurrencyStrategy = (typeof concurrencyStrategies)[number];

export interface ProjectConcurrency {
  readonly defaultLimit: number;
  readonly strategy: ConcurrencyStrategy;
}

export const MAX_CONCURRENCY_KEY_LENGTH = 200;

export const dispatchQueueMembers = {
  priority: {
    type: 'integer', minimum: 0, maximum: 9,
    description: 'Within its project, offered to workers before sessions of lower priority, first come first served within one; projects take turns (decision 0085); 5 when absent',
  },
  concurrencyKey: {
    // Printable: no control characters, so a key shows and logs as it was sent.
    type: 'string', minLength: 1, maxLength: MAX_CONCURRENCY_KEY_LENGTH, pattern: '^[^\\u0000-\\u001F\\u007F]+$',
    description: "Sessions sharing a key are held to the project's concurrency limit. When absent: "
      + '`repo:<repository id>:<ref or default branch>` for a session on a repository, `issue:<trackerIssue>` for one '
      + 'from a tracker issue, none otherwise',
  },
} as const;

export const projectConcurrencyBody = {
  type: 'object',
  additionalProperties: false,
  required: ['defaultLimit', 'strategy'],
  properties: {
    defaultLimit: { type: 'integer', minimum: 1, maximum: 1000, description: 'How many sessions of one key may hold a claim at once' },
    strategy: {
      enum: concurrencyStrategies,
      description: '`queue`: a session past the limit waits, offered to no worker, until one of its key ends. '
        + '`cancel-newest`: a dispatch past the limit is refused (409 `CONCURRENCY_LIMIT`). '
        + '`cancel-in-progress`: the running sessions of the key are stopped (`stopReason: "superseded"`) and the new one queued',
    },
  },
} as const;

export const projectConcurrencyReply = {
  type: 'object',
  required: ['projectId', 'configured', 'defaultLimit', 'strategy'],
  properties: {
    projectId: { type: 'string', format: 'uuid' },
    configured: { type: 'boolean', description: 'False while the project has no setting: keys are recorded, no limit applies' },
    defaultLimit: { type: ['integer', 'null'] },
    strategy: { type: ['string', 'null'], enum: [...concurrencyStrategies, null] },
  },
} as const;

/**
 * The key a dispatch that names none is counted under: two agents on one branch, or on one tracker issue, at once
 * is the conflict keys exist to prevent. A session on neither has no key.
 */
export function defaultConcurrencyKey(
  repository: { readonly id: string; readonly defaultBranch: string } | null | undefined, ref: string | null | undefined, trackerIssue: string | null,
): string | null {
  if (repository) return `repo:${repository.id}:${ref ?? repository.defaultBranch}`.slice(0, MAX_CONCURRENCY_KEY_LENGTH);
  if (trackerIssue !== null) return `issue:${trackerIssue}`.slice(0, MAX_CONCURRENCY_KEY_LENGTH);
  return null;
}
