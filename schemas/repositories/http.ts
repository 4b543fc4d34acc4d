import { MAX_REF_LENGTH, MAX_REPOSITORY_NAME_LENGTH, MAX_REPOSITORY_URL_LENGTH, REF_PATTERN, REPOSITORY_NAME_PATTERN } from './repository.js';

/**
 * HTTP schemas of a project's repositories (http/routes/repositories.ts). The URL's rules are more than a pattern can
 * say (schemes, credentials, options git would read): the route checks it with `repositoryUrlProblem` and answers 400
 * on `url` with the reason.
 */
export const createRepositoryBody = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: {
      type: 'string', minLength: 1, maxLength: MAX_REPOSITORY_URL_LENGTH,
      description: 'https://host/path, ssh://[user@]host/path or user@host:path; file:///path only on a node started with '
        + 'TROUPE_ALLOW_FILE_REPOSITORIES=1. No credentials, whitespace, transport helpers (ext::, fd::) or git options.',
    },
    name: {
      type: 'string', minLength: 1, maxLength: MAX_REPOSITORY_NAME_LENGTH, pattern: REPOSITORY_NAME_PATTERN,
      description: "Unique within the project (409 otherwise); default: the URL's last path segment without .git",
    },
    defaultBranch: {
      type: 'string', minLength: 1, maxLength: MAX_REF_LENGTH, pattern: REF_PATTERN,
      description: 'The branch a session starts from when its dispatch names no ref; default main',
    },
  },
} as const;

export const repositoryView = {
  type: 'object',
  required: ['id', 'url', 'name', 'defaultBranch', 'createdAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    url: { type: 'string' },
    name: { type: 'string' },
    defaultBranch: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const repositoryListReply = {
  type: 'object', required: ['repositories'],
  properties: { repositories: { type: 'array', items: repositoryView, description: 'Oldest first' } },
} as const;

export const repositoryDeletedReply = {
  type: 'object', required: ['id', 'deleted'],
  properties: { id: { type: 'string', format: 'uuid' }, deleted: { const: true } },
} as const;

/**
 * The repository a session runs on, as dispatch copied it (offers, session detail): a later edit or removal of the
 * project's repository does not move a session it already started.
 */
export const sessionRepositorySchema = {
  type: 'object',
  required: ['id', 'url', 'name', 'defaultBranch'],
  properties: {
    id: { type: 'string' }, url: { type: 'string' }, name: { type: 'string' }, defaultBranch: { type: 'string' },
  },
} as const;
