import { createHash } from 'node:crypto';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/deps.js';
import { publicIdPattern } from '../../actors/session/index.js';
import { workerStreams } from '../../actors/fleet/worker-streams.js';
import { interviewBatcher } from '../../actors/interview/batcher.js';
import { daemonServices } from '../../actors/daemon-host/services.js';
import { findSession } from '../../storage/sessions/queries.js';
import { appendSessionOutput, MAX_OUTPUT_TAIL_BYTES, sessionsHeldBy } from '../../storage/sessions/output.js';
import { offeredSessionSchema } from '../../schemas/sessions/daemon.js';
import { appendToolSteps, type ToolStepRow } from '../../storage/sessions/tool-steps.js';
import { orgPrincipal } from '../principal.js';
import type { HttpRequest, Route } from '../types.js';
import { route } from '../route.js';

/**
 * What `troupe worker` needs beyond the daemon protocol of spec 4.2 (decisions 0021 and 0022): a stream on which
 * the server pushes offers, stops and nudges to a connected worker; the list of sessions the server says it holds,
 * for reconciling after an outage; and the relay of its agents' output, kept with the session and streamed live.
 */

type RuntimePrincipal = Extract<ReturnType<typeof orgPrincipal>, { kind: 'runtime' }>;

function runtimeCaller(req: HttpRequest): RuntimePrincipal {
  const p = orgPrincipal(req);
  if (p.kind !== 'runtime') throw new TroupeError('AUTH_FORBIDDEN', 'this operation takes a worker runtime token');
  return p;
}

const sessionId = { type: 'string', pattern: '^[0-9a-f]{16}$' } as const;

const offeredSession = {
  type: 'object', required: ['id', 'projectId', 'prompt'],
  properties: {
    id: sessionId, projectId: { type: 'string', format: 'uuid' }, prompt: { type: 'string' },
    agentCardId: { type: 'string' }, workType: { type: 'string' }, provider: { type: 'string' },
    // A pushed offer is always a first run (decision 0075): a follow-up is announced as a `poll`.
    repository: offeredSessionSchema.properties.repository, ref: offeredSessionSchema.properties.ref,
    agent: offeredSessionSchema.properties.agent, run: offeredSessionSchema.properties.run,
  },
} as const;

/** The events of `GET /api/daemon/events`, documented once for the OpenAPI description and the worker. */
export const DAEMON_EVENTS_DESCRIPTION = [
  'The server\'s push channel to a connected worker (decision 0021). Server-sent events, each `data` a JSON object:',
  '',
  '- `ready` `{workerId}`: subscribed; from here on nothing for this worker is missed while the stream stays open. '
  + 'A worker (re)connecting polls once and reconciles what it holds (`GET /api/daemon/sessions`), since events sent '
  + 'while it was away are not replayed.',
  `- \`offer\` \`{session: ${'{id, projectId, prompt, agentCardId?, workType?, provider?, repository?, ref?, agent?, run}'}}\`: a session of one of the `
  + 'worker\'s projects entered the queue. A worker with free capacity claims it (`POST /api/sessions/{id}/status` '
  + '`claimed`); the first claim wins, the others get 409 and drop it. Sent to every connected worker of the project.',
  '- `poll` `{projectId?, sessionId?}`: work may be waiting that only `POST /api/daemon/poll` hands out (a session '
  + 'behind an issue lock, a waiter promoted, a prompt queued for a session the worker holds, a follow-up of a session '
  + 'this worker ran, whose offer carries the agent conversation to resume): poll now.',
  '- `stop` `{sessionId, status, reason}`: the worker held this session and no longer does (stopped by a user: '
  + '`status: stopped`; reclaimed after a lost lease: `pending`; failed by the lease: `failed`). End the agent; report '
  + 'nothing more for it. Sent within milliseconds of the change being durable.',
  '- `mutation` `{pending}`: mutations wait for this worker: heartbeat now to receive them.',
  '',
  'Keep-alive comments arrive every few seconds. The poll (`pollIntervalSeconds`) stays the fallback for anything a '
  + 'stream missed; a stream opened with a token lists the projects of that token, so a worker reconnects after a '
  + '`project.add`/`project.remove` mutation refreshed its token.',
].join('\n');

/** The `data` of each event of `GET /api/daemon/events`, for the OpenAPI document and the typed client. */
const daemonEvents = {
  ready: { schemaName: 'DaemonReadyEvent', schema: { type: 'object', required: ['workerId'], properties: { workerId: { type: 'string' } } } },
  offer: { schemaName: 'DaemonOfferEvent', schema: { type: 'object', required: ['session'], properties: { session: offeredSession } } },
  poll: {
    schemaName: 'DaemonPollEvent',
    schema: { type: 'object', properties: { projectId: { type: 'string', format: 'uuid' }, sessionId } },
  },
  stop: {
    schemaName: 'DaemonStopEvent',
    schema: {
      type: 'object', required: ['sessionId', 'status', 'reason'],
      properties: { sessionId, status: { type: 'string', description: 'The status the session moved to' }, reason: { type: 'string' } },
    },
  },
  mutation: { schemaName: 'DaemonMutationEvent', schema: { type: 'object', required: ['pending'], properties: { pending: { type: 'integer', minimum: 1 } } } },
} as const;

const toolStepsBody = {
  type: 'object', additionalProperties: false, required: ['workerId', 'steps'],
  properties: {
    workerId: { type: 'string', minLength: 1, maxLength: 64 },
    steps: {
      type: 'array', minItems: 1, maxItems: 100,
      items: {
        type: 'object', additionalProperties: false, required: ['tool', 'summary', 'at'],
        properties: {
          tool: { type: 'string', minLength: 1, maxLength: 100 },
          summary: { type: 'string', maxLength: 200 },
          at: { type: 'string', format: 'date-time', description: 'When the agent took the step (the worker\'s clock)' },
          id: {
            type: 'string', pattern: '^[A-Za-z0-9._:-]{1,100}$',
            description: 'The step\'s own id, unique within the run, if the worker has one; otherwise a step is known by its `at`, tool and summary',
          },
        },
      },
    },
  },
} as const;

/**
 * The key each step is recorded under, repeatable by a worker that retries the same request: its own id when it sent
 * one, else a digest of when and what it was (the n-th identical step of one request is told apart by n).
 */
function toolStepRows(steps: readonly { tool: string; summary: string; at: string; id?: string }[]): ToolStepRow[] {
  const seen = new Map<string, number>();
  return steps.map((step) => {
    const at = new Date(step.at);
    const body = `${step.tool}: ${step.summary}`;
    if (step.id !== undefined) return { key: `id:${step.id}`, body, at };
    const digest = createHash('sha256').update(JSON.stringify([at.toISOString(), step.tool, step.summary])).digest('hex').slice(0, 24);
    const n = (seen.get(digest) ?? 0) + 1;
    seen.set(digest, n);
    return { key: `${digest}.${n}`, body, at };
  });
}

export function workerProtocolRoutes(): Route<Deps>[] {
  return [
    {
      method: 'get',
      path: '/api/daemon/events',
      auth: 'runtime',
      sse: true,
      summary: 'Daemon event stream (SSE): offers of new work, stops of held sessions, poll and mutation nudges',
      description: DAEMON_EVENTS_DESCRIPTION,
      sseEvents: daemonEvents,
      tags: ['daemon', 'streams'],
      async handler(req, deps) {
        const p = runtimeCaller(req);
        const workers = workerStreams(deps);
        await workers.ready();
        return {
          kind: 'sse',
          open(stream) {
            const detach = workers.attach({
              workerId: p.workerId, orgId: p.orgId, projectIds: new Set(p.projectIds),
              send: (event, data) => { stream.send({ event, data }); },
            });
            stream.onClose(detach);
            stream.send({ event: 'ready', data: { workerId: p.workerId } });
          },
        };
      },
    },
    {
      method: 'get',
      path: '/api/daemon/sessions',
      auth: 'runtime',
      summary: 'The sessions the calling worker holds (claimed, running, paused, finalizing), for reconciling after an outage',
      description: 'A session the worker runs but is not listed here was stopped or reclaimed while the worker could not '
        + 'hear of it: the worker ends its agent and reports nothing for it. Only sessions claimed before this request '
        + 'was sent can be judged by its answer. Each session is listed under its public id and again under the key it was '
        + 'offered under before public ids followed the spec, so a worker from before that change keeps what it runs.',
      tags: ['daemon'],
      responseSchema: {
        type: 'object', required: ['sessions'],
        properties: {
          sessions: {
            type: 'array',
            items: { type: 'object', required: ['id', 'status', 'run'], properties: { id: sessionId, status: { type: 'string' }, run: { type: 'integer' } } },
          },
        },
      },
      async handler(req, deps) {
        const p = runtimeCaller(req);
        daemonServices(deps).liveness.record(p.workerId, deps.clock.now());
        return { body: { sessions: await sessionsHeldBy(deps.db, p.orgId, p.workerId) } };
      },
    },
    route({
      method: 'post',
      path: '/api/sessions/:id/output',
      auth: 'runtime',
      summary: "Agent output of a session the worker holds: kept with the session (its last 64 KiB) and relayed live on the session's interview stream",
      description: `Each chunk (an agent's stdout line with its newline) is appended to the session's kept output, of which `
        + `the last ${MAX_OUTPUT_TAIL_BYTES} bytes of the current run are shown in \`GET /api/public/sessions/{id}\` as \`output\`, `
        + 'and relayed as token deltas on `GET /api/interview/{id}/stream` (the interview named by the session id; frames of at '
        + 'most 20 tokens, at most 100 ms late). 409 when the worker no longer holds the session (stopped, reclaimed, ended): '
        + 'the worker stops relaying it.',
      tags: ['sessions', 'daemon'],
      bodySchema: {
        type: 'object', additionalProperties: false, required: ['workerId', 'chunks'],
        properties: {
          workerId: { type: 'string', minLength: 1, maxLength: 64 },
          chunks: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', maxLength: MAX_OUTPUT_TAIL_BYTES } },
        },
      },
      successStatus: 202,
      rateLimit: 'workerOutput',
      responseSchema: {
        type: 'object', required: ['ok', 'accepted', 'keptBytes', 'totalBytes'],
        properties: { ok: { const: true }, accepted: { type: 'integer' }, keptBytes: { type: 'integer' }, totalBytes: { type: 'integer' } },
      },
      async handler(req, deps) {
        const p = runtimeCaller(req);
        const body = req.body;
        if (body.workerId !== p.workerId) throw new TroupeError('AUTH_FORBIDDEN', 'workerId does not match the runtime token');
        const id = req.params.id ?? '';
        const session = publicIdPattern.test(id) ? await findSession(deps.db, p.orgId, id) : undefined;
        // Another org's session, or one outside the worker's projects, is not found.
        if (!session || !p.projectIds.includes(session.projectId)) throw new TroupeError('NOT_FOUND', 'session not found');
        const now = deps.clock.now();
        const appended = await appendSessionOutput(deps.db, p.orgId, session.key, p.workerId, body.chunks.join(''), now);
        if (!appended) throw new TroupeError('CONFLICT', 'this worker does not hold the session (stopped, reclaimed or ended)');
        interviewBatcher(deps).add(p.orgId, session.publicId, body.chunks);
        daemonServices(deps).liveness.record(p.workerId, now);
        return { status: 202, body: { ok: true, accepted: body.chunks.length, ...appended } };
      },
    }),
    route({
      method: 'post',
      path: '/api/sessions/:id/steps',
      auth: 'runtime',
      summary: "The agent's tool steps in a session the worker holds: listed in the session's activities (kind `tool`)",
      description: 'Each step becomes an activity of `GET /api/public/sessions/{id}` with kind `tool` and body `<tool>: <summary>`. '
        + 'A retried request adds nothing twice: a step is known by its `id` when it has one, else by its `at`, tool and summary. '
        + 'The call is also a step heartbeat (`lastToolCalledAt`, as `POST /api/sessions/{id}/step-heartbeat`). 409 when the '
        + 'worker no longer holds the session (stopped, reclaimed, ended); 404 for a session outside its org and projects.',
      tags: ['sessions', 'daemon'],
      bodySchema: toolStepsBody,
      successStatus: 202,
      rateLimit: 'workerOutput',
      responseSchema: {
        type: 'object', required: ['ok', 'accepted', 'recorded'],
        properties: {
          ok: { const: true }, accepted: { type: 'integer', description: 'Steps of the request, all taken (repeats included)' },
          recorded: { type: 'integer', description: 'Steps new to the session: a retried request records none' },
        },
      },
      async handler(req, deps) {
        const p = runtimeCaller(req);
        const body = req.body;
        if (body.workerId !== p.workerId) throw new TroupeError('AUTH_FORBIDDEN', 'workerId does not match the runtime token');
        const id = req.params.id ?? '';
        const session = publicIdPattern.test(id) ? await findSession(deps.db, p.orgId, id) : undefined;
        if (!session || !p.projectIds.includes(session.projectId)) throw new TroupeError('NOT_FOUND', 'session not found');
        const now = deps.clock.now();
        const written = await appendToolSteps(deps.db, p.orgId, session.key, p.workerId, toolStepRows(body.steps), new Date(now));
        if (!written.held) throw new TroupeError('CONFLICT', 'this worker does not hold the session (stopped, reclaimed or ended)');
        // The same coalesced write as a step heartbeat, under the same key, so the two never race each other.
        const services = daemonServices(deps);
        services.steps.record(`${p.orgId}/${id}`, { orgId: p.orgId, sessionId: id, workerId: p.workerId, at: now });
        services.liveness.record(p.workerId, now);
        return { status: 202, body: { ok: true, accepted: body.steps.length, recorded: written.inserted } };
      },
    }),
  ];
}
