import type { Deps } from '../../actors/services/deps.js';
import type { OrgPrincipal } from '../../actors/services/identity/principal.js';
import { sessionStatuses } from '../../actors/kinds/session/machine.js';
import { listProjects } from '../../storage/identity/orgs.js';
import { sessionsByTrackerIssue } from '../../storage/sessions/queries.js';
import { listSessions } from '../../storage/sessions/listing.js';
import type { HttpRequest, Reply, Route } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal } from '../principal.js';

/**
 * `GET /api/sessions`: the org's sessions, newest first, by status and project, paged by cursor; or, with
 * `trackerIssue`, the sessions of one tracker issue (CONTRACT "Sessions by tracker issue"). Only sessions of
 * projects the caller may read are listed, decided once per project.
 */
const MAX_PAGE = 200;
const listableStatuses = sessionStatuses.filter((s) => s !== 'absent');

const listQuery = {
  type: 'object', additionalProperties: false,
  properties: {
    trackerIssue: { type: 'string', minLength: 1, maxLength: 200 },
    status: {
      type: 'string', maxLength: 200, pattern: `^(${listableStatuses.join('|')})(,(${listableStatuses.join('|')}))*$`,
      description: 'Comma-separated statuses',
    },
    projectId: { type: 'string', format: 'uuid' },
    limit: { type: 'string', pattern: '^[1-9][0-9]{0,2}$', description: `Page size, 1-${MAX_PAGE} (default 50)` },
    cursor: { type: 'string', maxLength: 200, pattern: '^[A-Za-z0-9_-]+$', description: 'nextCursor of the previous page' },
  },
} as const;

const sessionItem = {
  type: 'object', required: ['id', 'projectId', 'status', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', pattern: '^[0-9a-f]{16}$' }, projectId: { type: 'string' }, status: { enum: listableStatuses },
    title: { type: 'string', description: 'First line of the prompt (list only)' }, trackerIssue: { type: ['string', 'null'] },
    workerId: { type: ['string', 'null'] }, costUsd: { type: 'number' }, createdAt: { type: 'string' }, updatedAt: { type: 'string' },
  },
} as const;

const listReply = {
  type: 'object', required: ['sessions'],
  properties: {
    sessions: { type: 'array', items: sessionItem },
    nextCursor: { type: ['string', 'null'], description: 'Absent for the tracker-issue lookup' },
  },
} as const;

async function readableProjects(deps: Deps, p: OrgPrincipal, only: string | undefined): Promise<string[]> {
  const projects = (await listProjects(deps.db, p.orgId)).filter((project) => only === undefined || project.id === only);
  const readable: string[] = [];
  for (const project of projects) {
    const decision = await deps.authz.check(p, 'read', { type: 'Session', id: 'list', orgId: p.orgId, projectId: project.id });
    if (decision.allowed) readable.push(project.id);
  }
  return readable;
}

async function list(req: HttpRequest, deps: Deps): Promise<Reply> {
  const p = orgPrincipal(req);
  const trackerIssue = req.query.get('trackerIssue');
  if (trackerIssue !== null) return { body: { sessions: await sessionsByTrackerIssue(deps.db, p.orgId, trackerIssue) } };
  const status = req.query.get('status');
  const cursor = req.query.get('cursor');
  const page = await listSessions(deps.db, p.orgId, {
    ...(status !== null ? { statuses: status.split(',') } : {}),
    projectIds: await readableProjects(deps, p, req.query.get('projectId') ?? undefined),
    limit: Math.min(MAX_PAGE, Number(req.query.get('limit') ?? 50)),
    ...(cursor !== null ? { cursor } : {}),
  });
  return { body: page };
}

export function sessionListRoute(): Route<Deps> {
  return route({
    method: 'get', path: '/api/sessions', auth: 'org', tags: ['sessions'],
    summary: 'Sessions of the org, newest first, filtered by status (comma-separated) and project, paged by cursor; with trackerIssue, the sessions of that issue',
    querySchema: listQuery, responseSchema: listReply,
    authorize: { action: 'read', resource: (_req, p) => ({ type: 'Session', id: 'list', orgId: p.orgId }) },
    handler: list,
  });
}
