import { createHash } from 'node:crypto';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { publicIdPattern } from '../../actors/kinds/session/index.js';
import { interviewBatcher } from '../../actors/services/interview/batcher.js';
import { daemonServices } from '../../actors/services/daemon/services.js';
import { findSession } from '../../storage/sessions/queries.js';
import { MAX_OUTPUT_TAIL_BYTES } from '../../storage/sessions/output.js';
import { relayOutput } from '../../storage/sessions/output-relay.js';
import { appendToolSteps, type ToolStepRow } from '../../storage/sessions/tool-steps.js';
import { recordToolStepsInTranscript } from './transcript-writes.js';
import { transcriptFollowers } from '../../actors/services/transcripts/followers.js';
import type { HttpRequest, Route } from '../types.js';
import { route } from '../route.js';
import { runtimeWorker } from './runtime-caller.js';

/**
 * The relay of a worker's agents (decision 0022): their output, kept with the session and streamed live on its
 * interview stream, and their tool steps, listed in the session's activities. Only for a session the worker holds.
 */

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

/** The worker the body names (its runtime token's), and the session `:id` names in that worker's org and projects. */
async function workerAndSession(req: HttpRequest<{ workerId: string }>, deps: Deps) {
  const p = runtimeWorker(req, req.body.workerId);
  const id = req.params.id ?? '';
  const session = publicIdPattern.test(id) ? await findSession(deps.db, p.orgId, id) : undefined;
  // Another org's session, or one outside the worker's projects, is not found.
  if (!session || !p.projectIds.includes(session.projectId)) throw new TroupeError('NOT_FOUND', 'session not found');
  return { p, id, session };
}

export function agentRelayRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post',
      path: '/api/sessions/:id/output',
      auth: 'runtime',
      summary: "Agent output of a session the worker holds: kept with the session (its last 64 KiB) and relayed live on the session's interview stream",
      description: `Each chunk (an agent's stdout line with its newline) is appended to the session's kept output, of which `
        + `the last ${MAX_OUTPUT_TAIL_BYTES} bytes of the current run are shown in \`GET /api/public/sessions/{id}\` as \`output\`, `
        + 'added to its whole transcript (one `output` entry per chunk, without its newline: `GET /api/public/sessions/{id}/transcript`), '
        + 'and relayed as token deltas on `GET /api/interview/{id}/stream` (the interview named by the session id; frames of at '
        + 'most 20 tokens, at most 100 ms late). With `relay` (the id of the worker\'s relay for this claim and the number of its '
        + 'chunks sent before this batch), a retried batch adds only the chunks its first try did not: each line is kept once. '
        + '409 when the worker no longer holds the session (stopped, reclaimed, ended): the worker stops relaying it.',
      tags: ['sessions', 'daemon'],
      bodySchema: {
        type: 'object', additionalProperties: false, required: ['workerId', 'chunks'],
        properties: {
          workerId: { type: 'string', minLength: 1, maxLength: 64 },
          chunks: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', maxLength: MAX_OUTPUT_TAIL_BYTES } },
          relay: {
            type: 'object', additionalProperties: false, required: ['id', 'firstChunk'],
            properties: {
              id: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$', description: 'The relay of this claim of the session: new for every claim' },
              firstChunk: { type: 'integer', minimum: 0, maximum: 1e12, description: 'How many chunks this relay sent before this batch' },
            },
          },
        },
      },
      successStatus: 202,
      rateLimit: 'workerOutput',
      responseSchema: {
        type: 'object', required: ['ok', 'accepted', 'repeated', 'keptBytes', 'totalBytes'],
        properties: {
          ok: { const: true }, accepted: { type: 'integer' }, keptBytes: { type: 'integer' }, totalBytes: { type: 'integer' },
          repeated: { type: 'integer', description: 'Chunks at the start of the batch an earlier try already kept (not kept again)' },
        },
      },
      async handler(req, deps) {
        const body = req.body;
        const { p, session } = await workerAndSession(req, deps);
        const now = deps.clock.now();
        const relayed = await relayOutput(deps.db, {
          orgId: p.orgId, sessionKey: session.key, workerId: p.workerId, chunks: body.chunks, relay: body.relay, capBytes: deps.config.transcriptMaxBytes, now,
        });
        if (!relayed) throw new TroupeError('CONFLICT', 'this worker does not hold the session (stopped, reclaimed or ended)');
        if (relayed.transcript) transcriptFollowers(deps).announce(p.orgId, session.publicId, relayed.transcript.last);
        if (relayed.repeats < body.chunks.length) interviewBatcher(deps).add(p.orgId, session.publicId, body.chunks.slice(relayed.repeats));
        daemonServices(deps).liveness.record(p.workerId, now);
        return { status: 202, body: { ok: true, accepted: body.chunks.length, repeated: relayed.repeats, keptBytes: relayed.keptBytes, totalBytes: relayed.totalBytes } };
      },
    }),
    route({
      method: 'post',
      path: '/api/sessions/:id/steps',
      auth: 'runtime',
      summary: "The agent's tool steps in a session the worker holds: listed in the session's activities (kind `tool`)",
      description: 'Each step becomes an activity of `GET /api/public/sessions/{id}` with kind `tool` and body `<tool>: <summary>`. '
        + 'and a `tool` entry of its transcript. A retried request adds nothing twice: a step is known by its `id` when it has one, else by its `at`, tool and summary. '
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
        const body = req.body;
        const { p, id, session } = await workerAndSession(req, deps);
        const now = deps.clock.now();
        const rows = toolStepRows(body.steps);
        const written = await appendToolSteps(deps.db, p.orgId, session.key, p.workerId, rows, new Date(now));
        if (!written.held) throw new TroupeError('CONFLICT', 'this worker does not hold the session (stopped, reclaimed or ended)');
        await recordToolStepsInTranscript(deps, p.orgId, session, body.steps.filter((_, i) => written.newKeys.has(rows[i]!.key)), now);
        // The same coalesced write as a step heartbeat, under the same key, so the two never race each other.
        const services = daemonServices(deps);
        services.steps.record(`${p.orgId}/${id}`, { orgId: p.orgId, sessionId: id, workerId: p.workerId, at: now });
        services.liveness.record(p.workerId, now);
        return { status: 202, body: { ok: true, accepted: body.steps.length, recorded: written.inserted } };
      },
    }),
  ];
}
