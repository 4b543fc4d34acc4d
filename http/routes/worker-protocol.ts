import type { Deps } from '../../actors/services/deps.js';
import { workerStreams } from '../../actors/services/fleet/worker-streams.js';
import { daemonServices } from '../../actors/services/daemon/services.js';
import { sessionsHeldBy } from '../../storage/sessions/output.js';
import { offeredSessionSchema } from '../../schemas/sessions/daemon.js';
import type { Route } from '../types.js';
import { runtimeCaller } from './runtime-caller.js';
import { agentRelayRoutes } from './agent-relay.js';

/**
 * What `troupe worker` needs beyond the daemon protocol of spec 4.2 (decisions 0021 and 0022): a stream on which
 * the server pushes offers, stops and nudges to a connected worker; the list of sessions the server says it holds,
 * for reconciling after an outage; and the relay of its agents' output and tool steps (agent-relay.ts), kept with
 * the session and streamed live.
 */

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
  + '`claimed`); the first claim wins, the others get 409 and drop it. Sent to every connected worker of the project; '
  + 'not sent for a paused project\'s queue, nor to a paused worker (decision 0079).',
  '- `poll` `{projectId?, sessionId?}`: work may be waiting that only `POST /api/daemon/poll` hands out (a session '
  + 'behind an issue lock, a waiter promoted, a prompt queued for a session the worker holds, a follow-up of a session '
  + 'this worker ran, whose offer carries the agent conversation to resume; `{}`: the worker was resumed): poll now.',
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

export function workerProtocolRoutes(): Route<Deps>[] {
  return [...workerChannelRoutes(), ...agentRelayRoutes()];
}

/** The server's side of a connected worker: its event stream, and the sessions it holds. */
function workerChannelRoutes(): Route<Deps>[] {
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
  ];
}
