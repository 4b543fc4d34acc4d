import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { interviewBatcher, interviewIdPattern, MAX_FRAME_DELAY_MS, MAX_TOKENS_PER_FRAME } from '../../actors/services/interview/batcher.js';
import { interviewChannel, nodeStreams, type SessionEvent, type StampedEvent } from '../../actors/services/fleet/node-streams.js';
import { interviewDeltasBody, interviewDeltasReply } from '../../schemas/daemon-extras/bodies.js';
import { orgPrincipal } from '../principal.js';
import { publicIdPattern } from '../../actors/kinds/session/index.js';
import { findSession } from '../../storage/sessions/queries.js';
import type { OrgPrincipal } from '../../schemas/identity/principal.js';
import { interviewDeltaEventSchema, sessionStatusEventSchema, streamResetEvent } from '../../schemas/sessions/stream-events.js';
import type { SseStream, Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';

/**
 * Live streams (decision 0012): interview token deltas in and out, and the org's session events. Every stream is
 * bound to the caller's org by construction (its channel is keyed by the authenticated org), so another org's
 * events cannot reach it whatever ids the client names.
 *
 * Resumption: a client reconnecting with `Last-Event-ID` gets the remembered events after that id, then live
 * ones. When the id is no longer remembered (too old, or this node never saw it) the stream first sends
 * `event: reset`, meaning "events were missed: reload the state, then keep listening".
 */

function attach<E>(
  stream: SseStream,
  subscribe: (listener: (e: StampedEvent<E>) => void, lastEventId?: string, onLost?: () => void) => { replay: readonly StampedEvent<E>[]; found: boolean; unsubscribe: () => void },
  eventName: string, keep: (e: E) => boolean = () => true,
): void {
  const send = (e: StampedEvent<E>) => { if (keep(e.data)) stream.send({ id: e.id, event: eventName, data: e.data }); };
  // Events lost on their way to this node (issue 20): the client hears it and reloads, as after a forgotten id.
  const lost = () => stream.send({ event: 'reset', data: { reason: 'events were lost on their way to this node; reload, then keep listening' } });
  const { replay, found, unsubscribe } = subscribe(send, stream.lastEventId, lost);
  stream.onClose(unsubscribe);
  if (!found) stream.send({ event: 'reset', data: { reason: 'the events after Last-Event-ID are no longer available' } });
  for (const e of replay) send(e);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function interviewId(raw: string | undefined): string {
  if (raw === undefined || !interviewIdPattern.test(raw)) {
    throw new TroupeError('VALIDATION_FAILED', 'interview id must be 1-64 characters of [A-Za-z0-9_-]', { field: 'id' });
  }
  return raw;
}

/**
 * An interview named by a session's id is that session's agent output, so it belongs to the session's project: a
 * worker registered for other projects may neither write into it nor read it, and a project role applies as on
 * the session itself. Any other interview id is org-wide.
 */
const onInterview = (action: 'read' | 'report'): RouteAuthorization<Deps, any, { id: string; projectId: string | undefined }> => ({
  async find(req, deps, p) {
    const id = interviewId(req.params.id);
    const session = publicIdPattern.test(id) ? await findSession(deps.db, p.orgId, id) : undefined;
    // A session's output streams under its public id, whichever of its names the caller used.
    return { id: session?.publicId ?? id, projectId: session?.projectId };
  },
  action,
  resource: (_req, p: OrgPrincipal, { id, projectId }) =>
    projectId !== undefined ? { type: 'Session', id, orgId: p.orgId, projectId } : { type: 'Session', id: '*', orgId: p.orgId },
});

export function streamRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post',
      path: '/api/interview/:id/deltas',
      auth: 'runtime',
      summary: `Interview token deltas from a worker; published as frames of at most ${MAX_TOKENS_PER_FRAME} tokens, at most ${MAX_FRAME_DELAY_MS} ms after arrival. A session's agent output streams under the session's id (the console's session page reads it there)`,
      tags: ['interview', 'streams'],
      bodySchema: interviewDeltasBody,
      responseSchema: interviewDeltasReply,
      successStatus: 202,
      rateLimit: 'workerOutput',
      authorize: onInterview('report'),
      async handler(req, deps, { found: { id } }) {
        const p = orgPrincipal(req);
        const tokens = req.body.tokens;
        interviewBatcher(deps).add(p.orgId, id, tokens);
        return { status: 202, body: { ok: true, accepted: tokens.length } };
      },
    }),
    route({
      method: 'get',
      path: '/api/interview/:id/stream',
      auth: 'any',
      sse: true,
      summary: 'Interview token deltas (SSE): `interview.delta` frames {interviewId, seq, tokens, at} in order; `Last-Event-ID` resumes',
      sseEvents: { 'interview.delta': { schemaName: 'InterviewDeltaEvent', schema: interviewDeltaEventSchema }, ...streamResetEvent },
      tags: ['interview', 'streams'],
      authorize: onInterview('read'),
      async handler(req, deps, { found: { id } }) {
        const p = orgPrincipal(req);
        const streams = nodeStreams(deps);
        await streams.ready();
        const channel = interviewChannel(p.orgId, id);
        return {
          kind: 'sse',
          open(stream) {
            attach(stream, (listener, last, onLost) => streams.interviews.subscribe(channel, listener, last, onLost), 'interview.delta');
          },
        };
      },
    }),
    route({
      method: 'get',
      path: '/api/sessions/events',
      auth: 'org',
      sse: true,
      summary: 'Live session events of the org (SSE): `session.status` {sessionId, projectId, previousStatus, status, epoch, at}; `Last-Event-ID` resumes',
      sseEvents: { 'session.status': { schemaName: 'SessionStatusEvent', schema: sessionStatusEventSchema }, ...streamResetEvent },
      tags: ['sessions', 'streams'],
      querySchema: { type: 'object', additionalProperties: false, properties: { projectId: { type: 'string', maxLength: 64 } } },
      authorize: { action: 'read', resource: (_req, p) => ({ type: 'Session', id: '*', orgId: p.orgId }) },
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const projectId = req.query.get('projectId') ?? undefined;
        if (projectId !== undefined && !uuidPattern.test(projectId)) {
          throw new TroupeError('HTTP_BAD_QUERY', 'projectId must be a UUID', { field: 'projectId' });
        }
        const streams = nodeStreams(deps);
        await streams.ready();
        return {
          kind: 'sse',
          open(stream) {
            attach<SessionEvent>(stream, (listener, last, onLost) => streams.sessions.subscribe(p.orgId, listener, last, onLost), 'session.status',
              (e) => projectId === undefined || e.projectId === projectId);
          },
        };
      },
    }),
  ];
}
