import { randomUUID } from 'node:crypto';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/deps.js';
import { newTrackerSessionId, publicIdPattern, publicSessionId, sessionAddress, sessionKey, type SessionReply } from '../../actors/session/index.js';
import { daemonServices } from '../../actors/daemon-host/services.js';
import { findSession, rememberSession, sessionDetail, sessionKeyByTracker, type FoundSession } from '../../storage/sessions/queries.js';
import { sessionTimeline } from '../../storage/sessions/listing.js';
import { trackerIssueProblem } from '../../storage/sessions/github-issue-ref.js';
import { sessionListRoute } from './session-list.js';
import { MAX_PROMPT_LENGTH } from '../../schemas/sessions/session-actor.js';
import { dispatchReads, recordRoutingDecision } from '../../storage/analytics/router.js';
import { chooseProvider, DEFAULT_WORK_TYPE } from '../../actors/analytics/router.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { auditTrail } from './audit-trail.js';
import { assertSignedDispatch, releaseNonceAfter } from '../../actors/integrations/requesters/signed-dispatch.js';
import { errorIssuesForSession } from '../../actors/integrations/error-tracker/index.js';
import { dispatchWorkspaceMembers, refOfDispatch, repositoryOfDispatch, workspaceInputProblem } from './dispatch-workspace.js';
import { sessionRepositorySchema } from '../../schemas/repositories/http.js';
import { owePullRequestForRun } from '../../actors/integrations/pull-requests/owe.js';
import { recordRunReport } from '../../storage/sessions/run-reports.js';
import { runReportDetail, runReportMembers } from './run-report-schemas.js';

/**
 * Sessions: dispatch, the worker's status transitions, and the public surface (stop, prompt, detail). Handlers
 * check tenancy against the read model first (another org's session is 404, never 403), then Cedar, then ask
 * the session actor and map its reply.
 */

/** The session in the caller's org, or 404 (absent, malformed id, or another org's). */
async function scopedSession(deps: Deps, orgId: string, id: string | undefined): Promise<FoundSession> {
  if (id === undefined || !publicIdPattern.test(id)) throw new TroupeError('NOT_FOUND', 'session not found');
  const found = await findSession(deps.db, orgId, id);
  if (!found) throw new TroupeError('NOT_FOUND', 'session not found');
  return found;
}

type ScopedSession = FoundSession;

/** `action` on the session `:id` names, found in the caller's org first (404 otherwise); the handler gets it as `found`. */
const onSession = (action: 'read' | 'operate'): RouteAuthorization<Deps, any, ScopedSession> => ({
  find: (req, deps, p) => scopedSession(deps, p.orgId, req.params.id),
  action,
  resource: (_req, p, session) => ({ type: 'Session', id: session.publicId, orgId: p.orgId, projectId: session.projectId }),
});

const short = { type: 'string', minLength: 1, maxLength: 200 } as const;
const sessionIdParam = { type: 'string', pattern: '^[0-9a-f]{16}$' } as const;

const dispatchBody = {
  type: 'object',
  additionalProperties: false,
  required: ['projectId', 'prompt'],
  properties: {
    projectId: { type: 'string', format: 'uuid' },
    prompt: { type: 'string', minLength: 1, maxLength: MAX_PROMPT_LENGTH },
    agentCardId: short,
    trackerIssue: short,
    workType: short,
    provider: short,
    /** The tracker's own session identifier; the public id is derived from it. Generated when absent. */
    trackerSessionId: { type: 'string', minLength: 1, maxLength: 500 },
    ...dispatchWorkspaceMembers,
  },
} as const;

const statusBody = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'workerId'],
  properties: {
    status: { enum: ['claimed', 'running', 'paused', 'finalizing', 'completed', 'failed', 'stopped'] },
    workerId: { type: 'string', minLength: 1, maxLength: 64 },
    costUsd: { type: 'number', minimum: 0, maximum: 1e9 },
    error: { type: 'string', maxLength: 4000 },
    phase: { type: 'string', maxLength: 200 },
    ...runReportMembers,
  },
} as const;

const transitionReply = {
  type: 'object', required: ['sessionId', 'previousStatus', 'newStatus'],
  properties: { sessionId: sessionIdParam, previousStatus: { type: 'string' }, newStatus: { type: 'string' } },
} as const;

const nullableString = { type: ['string', 'null'] } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

const sessionDetailReply = {
  type: 'object',
  required: [
    'id', 'status', 'orgId', 'project', 'worker', 'prompt', 'provider', 'workType', 'phase', 'error', 'costUsd', 'run', 'prompts',
    'activities', 'createdAt', 'updatedAt', 'timeline', 'can', 'agent', 'usage', 'workspace', 'pullRequest',
  ],
  properties: {
    id: sessionIdParam, status: { type: 'string' }, orgId: { type: 'string' },
    project: {
      type: 'object', required: ['id', 'name', 'slug'],
      properties: { id: { type: 'string' }, name: nullableString, slug: nullableString },
    },
    worker: {
      type: ['object', 'null'], required: ['id', 'hostname', 'lastSeenAt', 'holdsClaim'],
      description: 'The worker holding the session, or the last one that held it (holdsClaim false); null before any claimed it',
      properties: { id: { type: 'string' }, hostname: nullableString, lastSeenAt: nullableTime, holdsClaim: { type: 'boolean' } },
    },
    trackerSessionId: nullableString, trackerIssue: nullableString, waitingForIssueLock: { type: 'boolean' },
    prompt: { type: 'string' }, agentCardId: nullableString, workType: nullableString, provider: nullableString,
    repository: {
      oneOf: [{ type: 'null' }, sessionRepositorySchema],
      description: 'The project repository the session runs on, as it was when dispatched; null when it names none',
    },
    ref: { ...nullableString, description: 'The branch, tag or commit the session starts from' },
    phase: nullableString, error: nullableString, costUsd: { type: 'number' },
    run: { type: 'integer', description: 'How many times the session was dispatched (a prompt after it ended dispatches it again)' },
    requestedBy: nullableString,
    workflowRun: {
      type: ['object', 'null'], required: ['runId', 'workflowId', 'version'],
      description: 'The workflow run (and so the pinned version) whose agent step dispatched the session',
      properties: { runId: { type: 'string' }, workflowId: { type: 'string' }, version: { type: 'integer' } },
    },
    prompts: {
      type: 'array',
      items: {
        type: 'object', required: ['id', 'text', 'run', 'queued', 'createdAt'],
        properties: {
          id: { type: 'string' }, text: { type: 'string' }, run: { type: 'integer' }, queued: { type: 'boolean' },
          createdAt: nullableTime, deliveredAt: nullableTime, archivedAt: nullableTime,
        },
      },
    },
    activities: {
      type: 'array', description: "The session's newest 200 activities, oldest first: status notes, provider notes, the agent's tool steps (kind `tool`)",
      items: {
        type: 'object', required: ['id', 'kind', 'body', 'createdAt'],
        properties: { id: { type: 'string' }, kind: { type: 'string' }, body: { type: 'string' }, createdAt: nullableTime },
      },
    },
    createdAt: nullableTime, updatedAt: nullableTime, claimedAt: nullableTime, startedAt: nullableTime, finishedAt: nullableTime,
    lastToolCalledAt: nullableTime,
    timeline: {
      type: 'array', description: 'Every status the session moved through, oldest first (run counts dispatches)',
      items: {
        type: 'object', required: ['from', 'status', 'run', 'at'],
        properties: { from: { type: 'string' }, status: { type: 'string' }, run: { type: 'integer' }, workerId: { type: ['string', 'null'] }, at: { type: 'string' } },
      },
    },
    output: {
      type: ['object', 'null'], required: ['tail', 'totalBytes', 'truncated', 'updatedAt'],
      description: "The last 64 KiB of the current run's agent output as its worker relayed it (null until the agent prints)",
      properties: { tail: { type: 'string' }, totalBytes: { type: 'integer' }, truncated: { type: 'boolean' }, updatedAt: { type: 'string' } },
    },
    trackerComments: {
      type: 'array',
      description: 'The comments each end (or stop) of the session owed the Linear or GitHub issue it came from: pending, sent, or failed with the reason',
      items: {
        type: 'object', required: ['tracker', 'issue', 'kind', 'run', 'sessionStatus', 'status', 'attempts', 'lastError', 'url', 'sentAt', 'createdAt'],
        properties: {
          tracker: { enum: ['linear', 'github'] }, issue: { type: 'string' }, kind: { enum: ['terminal', 'stop'] }, run: { type: 'integer' },
          sessionStatus: { type: 'string' }, status: { enum: ['pending', 'sent', 'failed'] }, attempts: { type: 'integer' },
          lastError: nullableString, url: nullableString, sentAt: nullableTime, createdAt: { type: 'string', format: 'date-time' },
        },
      },
    },
    ...runReportDetail,
    can: {
      type: 'object', required: ['stop', 'prompt'], description: 'Whether the caller may stop or prompt it (the routes still decide)',
      properties: { stop: { type: 'boolean' }, prompt: { type: 'boolean' } },
    },
  },
} as const;

function withoutKind(reply: SessionReply): Record<string, unknown> {
  const { kind: _kind, ...rest } = reply;
  return rest;
}

export function sessionRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post',
      path: '/api/agent-dispatch', rateLimit: 'dispatch',
      auth: 'org',
      summary: 'Dispatch an agent session (pending until a worker of the project claims it)',
      tags: ['sessions'],
      bodySchema: dispatchBody,
      successStatus: 201,
      responseSchema: { type: 'object', required: ['sessionId', 'status'], properties: { sessionId: sessionIdParam, status: { const: 'pending' } } },
      authorize: {
        async find(req, deps, p) {
          // Checked like the schema, before the signature's nonce is spent: a refused reference dispatched nothing.
          const issueProblem = req.body.trackerIssue === undefined ? null : trackerIssueProblem(req.body.trackerIssue);
          if (issueProblem !== null) throw new TroupeError('VALIDATION_FAILED', issueProblem, { field: 'trackerIssue' });
          workspaceInputProblem(req.body);
          // Signed-requester checks (spec 5.5, decision 0014) run before anything is read or created: a bound credential
          // whose requester holds a key must sign this exact request.
          const signed = await assertSignedDispatch(deps, p, req);
          try {
            // The router's arms come in the same statement as the project check, for the handler to choose from.
            const { projectKnown, arms } = await dispatchReads(deps.db, p.orgId, req.body.projectId, req.body.provider === undefined);
            if (!projectKnown) throw new TroupeError('NOT_FOUND', 'project not found', { field: 'projectId' });
            return { signed, arms };
          } catch (err) {
            await releaseNonceAfter(deps, signed, err).catch(() => undefined);
            throw err;
          }
        },
        // A dispatch refused for an outage did not happen: its retry, the same signed request, is not a replay.
        release: ({ signed }, err, deps) => releaseNonceAfter(deps, signed, err),
        action: 'dispatch',
        resource: (req, p) => ({ type: 'Session', id: 'new', orgId: p.orgId, projectId: req.body.projectId }),
      },
      async handler(req, deps, { found: { arms } }) {
        const p = orgPrincipal(req);
        const body = req.body;
        const trackerSessionId = body.trackerSessionId ?? newTrackerSessionId();
        // The org's own session for this tracker id when it has one (also one made before ids were org-scoped).
        const key = (body.trackerSessionId !== undefined ? await sessionKeyByTracker(deps.db, p.orgId, trackerSessionId) : undefined)
          ?? sessionKey(p.orgId, trackerSessionId);
        const sessionId = publicSessionId(trackerSessionId);
        const repository = await repositoryOfDispatch(deps.db, p.orgId, body.projectId, body.repository);
        // No provider named: Thompson sampling over the org's router posteriors, seeded by the request id so the
        // choice is reproducible (decision 0013). Null while the org has no arms yet; the worker then decides.
        const routed = body.provider === undefined
          ? chooseProvider(arms, body.workType ?? DEFAULT_WORK_TYPE, req.requestId)
          : undefined;
        const reply = await deps.ask<SessionReply>(sessionAddress(key), {
          type: 'session.dispatch', orgId: p.orgId, projectId: body.projectId, trackerSessionId, prompt: body.prompt,
          agentCardId: body.agentCardId ?? null, trackerIssue: body.trackerIssue ?? null, workType: body.workType ?? null,
          provider: body.provider ?? routed?.provider ?? null, requestedBy: requesterOf(p),
          repository, ref: refOfDispatch(repository, body.ref), agent: body.agent ?? null,
        });
        if (reply.kind !== 'dispatched') throw new TroupeError('INTERNAL', 'unexpected reply to dispatch');
        // A fresh tracker id made a new session in this project; a named one may have found an older session elsewhere.
        if (body.trackerSessionId === undefined) rememberSession(deps.db, p.orgId, { key, publicId: sessionId, projectId: body.projectId });
        if (routed !== undefined) {
          await recordRoutingDecision(deps.db, { orgId: p.orgId, sessionId: key, requestId: req.requestId, choice: routed, at: deps.clock.now() });
        }
        return { status: 201, body: { sessionId, status: reply.status } };
      },
    }),
    route({
      method: 'post',
      path: '/api/sessions/:id/status',
      auth: 'runtime',
      summary: 'A worker moves a session through its status machine (409 on an illegal move)',
      description: 'The report may carry what the worker knows of the run: `agent`, `usage`, `workspace` (issue 34). '
        + 'They are kept, the latest of each per run, once the move is accepted, and shown in `GET /api/public/sessions/{id}`; '
        + 'a refused move keeps nothing. A run that ends `completed` with a pushed workspace of new commits opens a pull '
        + "request when its repository is on GitHub and the org has a GitHub connection.",
      tags: ['sessions', 'daemon'],
      bodySchema: statusBody,
      responseSchema: transitionReply,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        if (p.kind !== 'runtime') throw new TroupeError('AUTH_FORBIDDEN');
        const body = req.body;
        if (body.workerId !== p.workerId) throw new TroupeError('AUTH_FORBIDDEN', 'workerId does not match the runtime token');
        const id = req.params.id;
        if (id === undefined || !publicIdPattern.test(id)) throw new TroupeError('NOT_FOUND', 'session not found');
        // The name is found in the worker's org (one indexed read); the actor, which holds the session's projects,
        // answers NOT_FOUND for one outside the worker's (its machine's screen).
        const found = await findSession(deps.db, p.orgId, id);
        if (!found) throw new TroupeError('NOT_FOUND', 'session not found');
        const { agent, usage, workspace, ...transition } = body;
        // The usage's cost is the report's when it names none of its own (the protocol of issue 34).
        const costUsd = transition.costUsd ?? usage?.costUsd;
        const reply = await deps.ask<SessionReply>(sessionAddress(found.key), {
          type: 'session.transition', ...transition, ...(costUsd === undefined ? {} : { costUsd }), orgId: p.orgId, projectIds: p.projectIds,
        });
        // Facts about the run, kept beside the actor's state, and only once the actor took the report from this worker.
        if (agent !== undefined || usage !== undefined || workspace !== undefined) {
          await recordRunReport(deps.db, p.orgId, found.key, p.workerId, { agent, usage, workspace }, new Date(deps.clock.now()));
        }
        // Owed after the end is durable: a worker retrying a `completed` whose reply it lost owes it again, once.
        if (reply.kind === 'transitioned' && reply.newStatus === 'completed') await owePullRequestForRun(deps, p.orgId, found.key);
        daemonServices(deps).liveness.record(p.workerId, deps.clock.now());
        return { body: withoutKind(reply) };
      },
    }),
    route({
      method: 'post',
      path: '/api/public/sessions/:id/stop',
      auth: 'org',
      summary: 'Stop a session (a terminal session answers stopped: false)',
      tags: ['sessions'],
      bodyKind: 'none',
      responseSchema: {
        type: 'object', required: ['stopped', 'sessionId', 'previousStatus', 'newStatus'],
        properties: { stopped: { type: 'boolean' }, sessionId: sessionIdParam, previousStatus: { type: 'string' }, newStatus: { type: 'string' } },
      },
      authorize: onSession('operate'),
      async handler(req, deps, { found: session }) {
        const p = orgPrincipal(req);
        const reply = await deps.ask<SessionReply>(sessionAddress(session.key), { type: 'session.stop', requestedBy: requesterOf(p) });
        if (reply.kind === 'stopped' && reply.stopped) {
          await auditTrail(deps, p.orgId, 'session.stopped', requesterOf(p), session.publicId, { previousStatus: reply.previousStatus });
        }
        return { body: withoutKind(reply) };
      },
    }),
    route({
      method: 'post',
      path: '/api/public/sessions/:id/prompt', rateLimit: 'dispatch',
      auth: 'org',
      summary: 'Send a session a prompt (a terminal session is re-dispatched; a live one gets it on its next poll)',
      tags: ['sessions'],
      bodySchema: {
        type: 'object', additionalProperties: false, required: ['prompt'],
        properties: { prompt: { type: 'string', minLength: 1, maxLength: MAX_PROMPT_LENGTH } },
      },
      responseSchema: {
        type: 'object', required: ['delivered', 'promptId', 'sessionId', 'status'],
        properties: { delivered: { type: 'boolean' }, promptId: { type: 'string' }, sessionId: sessionIdParam, status: { type: 'string' } },
      },
      authorize: onSession('operate'),
      async handler(req, deps, { found: session }) {
        const p = orgPrincipal(req);
        const reply = await deps.ask<SessionReply>(sessionAddress(session.key), {
          type: 'session.prompt', promptId: randomUUID(), prompt: req.body.prompt, requestedBy: requesterOf(p),
        });
        // The prompt's text is the user's prose: the chain records that one was sent, not what it said.
        if (reply.kind === 'prompted') {
          await auditTrail(deps, p.orgId, 'session.prompted', requesterOf(p), session.publicId, { promptId: reply.promptId, status: reply.status });
        }
        return { body: withoutKind(reply) };
      },
    }),
    route({
      method: 'get',
      path: '/api/public/sessions/:id',
      auth: 'org',
      summary: 'Enriched session detail: status, project, worker, prompts, activities, cost, timestamps, status timeline, what the caller may do',
      tags: ['sessions'],
      responseSchema: sessionDetailReply,
      authorize: onSession('read'),
      async handler(req, deps, { found: session }) {
        const p = orgPrincipal(req);
        const resource = { type: 'Session', id: session.publicId, orgId: p.orgId, projectId: session.projectId } as const;
        const [detail, timeline, operate] = await Promise.all([
          sessionDetail(deps.db, p.orgId, session.key), sessionTimeline(deps.db, p.orgId, session.key), deps.authz.check(p, 'operate', resource),
        ]);
        if (!detail) throw new TroupeError('NOT_FOUND', 'session not found');
        // `can` tells a page which controls to offer; the write routes decide again on their own.
        return { body: { ...detail, timeline, can: { stop: operate.allowed, prompt: operate.allowed } } };
      },
    }),
    sessionListRoute(),
    route({
      method: 'get',
      path: '/api/sessions/:id/error-issues',
      auth: 'org',
      summary: "Error-tracker issues linked to a session (at most 25; configured: false without the org's connection)",
      tags: ['sessions'],
      responseSchema: {
        type: 'object', required: ['configured', 'issues'],
        description: "Issues of the org's Sentry connection tagged `session_id:<id>`; an expiring or refused access token is "
          + 'refreshed first. When Sentry cannot be reached, refuses the token or answers badly, the answer is still 200 with '
          + '`configured: true`, no issues and `error` (`unreachable`; `unauthorized`: the token lacks access; `bad-response`; '
          + '`reauthorization-required`: Sentry refused the refresh, connect Sentry again), so a session view never fails because of its tracker.',
        properties: {
          configured: { type: 'boolean' },
          issues: {
            type: 'array', maxItems: 25,
            items: {
              type: 'object', required: ['id', 'title', 'organization'],
              properties: {
                id: { type: 'string' }, shortId: { type: ['string', 'null'] }, title: { type: 'string' }, culprit: { type: ['string', 'null'] },
                level: { type: ['string', 'null'] }, status: { type: ['string', 'null'] }, url: { type: ['string', 'null'] },
                count: { type: ['number', 'null'] }, firstSeen: { type: ['string', 'null'] }, lastSeen: { type: ['string', 'null'] },
                project: { type: ['string', 'null'] }, organization: { type: 'string' },
              },
            },
          },
          error: { enum: ['unreachable', 'unauthorized', 'bad-response', 'reauthorization-required'] },
        },
      },
      authorize: onSession('read'),
      async handler(req, deps, { found: session }) {
        const p = orgPrincipal(req);
        // The org's Sentry OAuth connection, if any, through the outbound guard (actors/integrations/error-tracker).
        return { body: await errorIssuesForSession(deps, p.orgId, session.publicId) };
      },
    }),
  ];
}
