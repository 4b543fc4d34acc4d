import { randomUUID } from 'node:crypto';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { publicIdPattern, sessionAddress, type SessionReply } from '../../actors/kinds/session/index.js';
import { findSession, sessionDetail, type FoundSession } from '../../storage/sessions/queries.js';
import { sessionTimeline } from '../../storage/sessions/listing.js';
import { stopReasonOf } from '../../storage/budgets/budgets.js';
import { sessionListRoute } from './session-list.js';
import { MAX_PROMPT_LENGTH } from '../../schemas/sessions/session-actor.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { auditTrail } from './audit-trail.js';
import { transcriptFollowers } from '../../actors/services/transcripts/followers.js';
import { errorIssuesForSession } from '../../actors/services/integrations/error-tracker/index.js';
import { sessionDetailReply, sessionIdParam, withoutKind } from './session-schemas.js';

/**
 * The public surface of a session: stop and prompt it, read its detail, the list, and its error-tracker issues.
 * Handlers check tenancy against the read model first (another org's session is 404, never 403), then Cedar.
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

export function publicSessionRoutes(): Route<Deps>[] {
  return [...sessionControlRoutes(), ...sessionReadRoutes()];
}

function sessionControlRoutes(): Route<Deps>[] {
  return [
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
        // The session machine decides the stop, audits it and tells the worker (actors/kinds/session/machine.ts, `stop`).
        const reply = await deps.ask<SessionReply>(sessionAddress(session.key), { type: 'session.stop', requestedBy: requesterOf(p) });
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
          // The prompt is in the transcript with the session's transition: its followers read it now, not at their next look.
          transcriptFollowers(deps).announce(p.orgId, session.publicId, 0);
          await auditTrail(deps, p.orgId, 'session.prompted', requesterOf(p), session.publicId, { promptId: reply.promptId, status: reply.status });
        }
        return { body: withoutKind(reply) };
      },
    }),
  ];
}

function sessionReadRoutes(): Route<Deps>[] {
  return [
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
        const [detail, timeline, operate, stopReason] = await Promise.all([
          sessionDetail(deps.db, p.orgId, session.key), sessionTimeline(deps.db, p.orgId, session.key), deps.authz.check(p, 'operate', resource),
          stopReasonOf(deps.db, p.orgId, session.key),
        ]);
        if (!detail) throw new TroupeError('NOT_FOUND', 'session not found');
        // `can` tells a page which controls to offer; the write routes decide again on their own.
        return { body: { ...detail, stopReason, timeline, can: { stop: operate.allowed, prompt: operate.allowed } } };
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
        // The org's Sentry OAuth connection, if any, through the outbound guard (actors/services/integrations/error-tracker).
        return { body: await errorIssuesForSession(deps, p.orgId, session.publicId) };
      },
    }),
  ];
}
