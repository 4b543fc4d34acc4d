import { createHash, randomUUID } from 'node:crypto';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { trackerTargetOf } from '../../storage/sessions/tracker-comments.js';
import { appendProgress, findAgentRequest, oweAgentComment } from '../../storage/sessions/agent-line.js';
import { findGate } from '../../storage/workflows/runs.js';
import { publicIdOfKey } from '../../storage/sessions/queries.js';
import { recordToolStepsInTranscript } from './transcript-writes.js';
import { agentCaller, sessionTokenRoute } from './session-agent-token.js';
import { agentAskRoutes } from './session-agent-asks.js';
import { route } from '../route.js';

/**
 * What one run of an agent may write through its line (a review of issue 35 §3): an agent, or a prompt injected into
 * it, must not flood the timeline or spend the org's tracker quota. Generous for real work.
 */
const MAX_PROGRESS_PER_RUN = 1000;
const MAX_COMMENTS_PER_RUN = 20;
import type { Route } from '../types.js';

/**
 * The agent's line to the team (issue 35 §3, decision 0088): the routes behind `troupe mcp`'s tools, each taking the
 * session token a worker gave its agent (session-agent-token.ts), plus what an approver reads of an agent's request.
 * Asking a person: session-agent-asks.ts. Here: progress on the session's timeline, a comment on its tracker issue.
 */

/** A caller's own key for a note makes a retried call add nothing twice; without one each call is a new note. */
const noteKey = { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,100}$' } as const;

export function sessionAgentLineRoutes(): Route<Deps>[] {
  return [sessionTokenRoute(), ...agentAskRoutes(), progressRoute(), trackerCommentRoute(), agentRequestRoute()];
}

function progressRoute(): Route<Deps> {
  return route({
    method: 'post', path: '/api/sessions/:id/agent/progress', auth: 'none', tags: ['agent-line'],
    summary: "The session's agent reports progress: a step on the session's timeline (activity kind `agent.progress`)",
    description: 'Takes the session token. Also a `tool` entry (`report_progress`) of the session\'s transcript.',
    bodySchema: {
      type: 'object', additionalProperties: false, required: ['message'],
      properties: { message: { type: 'string', minLength: 1, maxLength: 2000 }, key: noteKey },
    },
    successStatus: 201,
    responseSchema: { type: 'object', required: ['recorded'], properties: { recorded: { type: 'boolean', description: 'false for a repeated key' } } },
    async handler(req, deps) {
      const { claims, run } = await agentCaller(req, deps);
      const message = req.body.message.trim();
      if (message === '') throw new TroupeError('VALIDATION_FAILED', 'message is empty');
      const now = deps.clock.now();
      const written = await appendProgress(deps.db, claims.org, run.key, claims.ep, req.body.key ?? randomUUID(), message, new Date(now), MAX_PROGRESS_PER_RUN);
      if (!written.live) throw new TroupeError('AUTH_INVALID', "the session token's run has ended");
      if (written.full) {
        throw new TroupeError('CONFLICT', `this run has reported progress ${MAX_PROGRESS_PER_RUN} times, the most one run may`, { limit: MAX_PROGRESS_PER_RUN });
      }
      if (written.inserted) {
        const session = { key: run.key, publicId: run.publicId, projectId: run.projectId };
        await recordToolStepsInTranscript(deps, claims.org, session, [{ tool: 'report_progress', summary: message, at: new Date(now).toISOString() }], now);
      }
      return { status: 201, body: { recorded: written.inserted } };
    },
  });
}

function trackerCommentRoute(): Route<Deps> {
  return route({
    method: 'post', path: '/api/sessions/:id/agent/tracker-comments', auth: 'none', tags: ['agent-line'],
    summary: "The session's agent writes a comment on the tracker issue the session came from, through the tracker outbox",
    description: 'Takes the session token. The comment is owed to the outbox (decision 0028: sent by any node, retried with '
      + 'backoff) and listed in the session detail\'s `trackerComments` with `kind: agent`. 409 when the session came from '
      + 'no Linear or GitHub issue, or the org has no connection to that tracker.',
    bodySchema: {
      type: 'object', additionalProperties: false, required: ['text'],
      properties: { text: { type: 'string', minLength: 1, maxLength: 20_000 }, key: noteKey },
    },
    successStatus: 202,
    responseSchema: {
      type: 'object', required: ['tracker', 'issue', 'status'],
      properties: { tracker: { enum: ['linear', 'github'] }, issue: { type: 'string' }, status: { const: 'pending' } },
    },
    async handler(req, deps) {
      const { claims, run } = await agentCaller(req, deps);
      const text = req.body.text.trim();
      if (text === '') throw new TroupeError('VALIDATION_FAILED', 'text is empty');
      const target = trackerTargetOf(run);
      if (target === null) throw new TroupeError('CONFLICT', 'the session came from no tracker issue');
      const key = req.body.key ?? randomUUID();
      // The id is the outbox's idempotency key: one per run and caller's key, bounded whatever the key's length.
      const id = `${run.key}:${claims.ep}:agent:${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
      const owed = await oweAgentComment(deps.db, {
        id, orgId: claims.org, sessionKey: run.key, epoch: claims.ep, tracker: target.tracker, issue: target.issue,
        sessionStatus: run.status, body: text, at: new Date(deps.clock.now()),
      }, MAX_COMMENTS_PER_RUN);
      if (owed === 'unconnected') throw new TroupeError('CONFLICT', `the org has no ${target.tracker} connection`);
      if (owed === 'full') {
        throw new TroupeError('CONFLICT', `this run has posted ${MAX_COMMENTS_PER_RUN} tracker comments, the most one run may`, { limit: MAX_COMMENTS_PER_RUN });
      }
      return { status: 202, body: { tracker: target.tracker, issue: target.issue, status: 'pending' } };
    },
  });
}

function agentRequestRoute(): Route<Deps> {
  return route({
    method: 'get', path: '/api/approval-gates/:id/agent-request', auth: 'org', tags: ['approvals', 'agent-line'],
    summary: "What a session's agent asked in an approval gate it opened: the summary and details, or the tool and its whole input",
    responseSchema: {
      type: 'object', required: ['gateId', 'sessionId', 'run', 'kind', 'summary', 'details', 'tool', 'createdAt'],
      properties: {
        gateId: { type: 'string' }, sessionId: { type: 'string' }, run: { type: 'integer' }, kind: { enum: ['approval', 'tool'] },
        summary: { type: 'string' }, details: { type: ['string', 'null'] },
        tool: { type: ['object', 'null'], required: ['name', 'input'], properties: { name: { type: 'string' }, input: { type: 'object' } } },
        createdAt: { type: 'string', format: 'date-time' },
      },
    },
    authorize: {
      async find(req, deps, p) {
        const id = req.params.id ?? '';
        const gate = /^[0-9a-f-]{36}$/.test(id) ? await findGate(deps.db, p.orgId, id) : undefined;
        const request = gate === undefined ? undefined : await findAgentRequest(deps.db, p.orgId, id);
        if (gate === undefined || request === undefined) throw new TroupeError('NOT_FOUND', 'no agent request behind this gate');
        return { gate, request };
      },
      action: 'read',
      resource: (_req, p, { gate }) => ({ type: 'ApprovalGate', id: gate.id, orgId: p.orgId, ...(gate.projectId ? { projectId: gate.projectId } : {}) }),
    },
    async handler(_req, deps, { found: { request } }) {
      const sessionId = (await publicIdOfKey(deps.db, request.orgId, request.sessionKey)) ?? request.sessionKey;
      return {
        body: {
          gateId: request.gateId, sessionId, run: request.epoch, kind: request.kind, summary: request.summary, details: request.details,
          tool: request.toolName === null ? null : { name: request.toolName, input: request.toolInput }, createdAt: request.createdAt.toISOString(),
        },
      };
    },
  });
}
