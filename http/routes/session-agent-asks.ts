import { createHash, randomUUID } from 'node:crypto';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { sessionAddress, type SessionReply } from '../../actors/kinds/session/index.js';
import type { ReportableStatus } from '../../actors/kinds/session/machine.js';
import { approvalGateAddress } from '../../actors/kinds/approval-gate/actor.js';
import type { GateMsg, GateView } from '../../actors/kinds/approval-gate/machine.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { findGate } from '../../storage/workflows/runs.js';
import {
  findAgentRequest, recordAgentRequestWithin, sessionRun, undecidedRequests, type AgentRequestKind, type SessionRun,
} from '../../storage/sessions/agent-line.js';
import type { SessionClaims } from '../../actors/services/identity/tokens.js';
import { agentCaller } from './session-agent-token.js';
import { approvalWaits } from '../../actors/services/governance/approval-waits.js';
import { route } from '../route.js';
import { agentGateTitle, visibleText } from './agent-text.js';
import type { Route } from '../types.js';

/**
 * The agent asks a person (issue 35 §3, decision 0088): `request_approval` and Claude Code's permission prompt, each
 * an approval gate linked to the session (the approvals inbox lists it, its deciders get the gate's web push), then
 * a wait for the decision. The wait is a long poll the MCP server repeats: it reads the gate and the session when a
 * decision of the gate or a change of the session is announced on any node (`ApprovalWaits`), and every few seconds
 * in case an announcement was lost; a node going away loses nothing (the next poll lands on another). The session's
 * `phase` says `waiting for approval` meanwhile.
 */

export const WAITING_PHASE = 'waiting for approval';
const DECIDED_PHASE = 'approval decided';
/** How long a wait goes without reading when nothing is announced: the bound on a lost announcement's delay. */
const FALLBACK_LOOK_MS = 5000;
const MAX_WAIT_SECONDS = 30;
const DEFAULT_WAIT_SECONDS = 25;
const TITLE_MAX = 500;
/** Undecided requests one run may have open: an agent in a loop must not flood its team's inbox. */
export const MAX_OPEN_REQUESTS = 20;

/** The caller's name for a request: a retry with the same key answers the request it made, never opens a second gate. */
const requestKey = { type: 'string', minLength: 1, maxLength: 200, description: 'Idempotency key: a retry with the same key in the same run answers the request already made' } as const;

const requestReply = {
  type: 'object', required: ['id', 'status', 'kind', 'summary'],
  properties: {
    id: { type: 'string', format: 'uuid', description: 'The approval gate the request opened' },
    status: { const: 'pending' }, kind: { enum: ['approval', 'tool'] }, summary: { type: 'string' },
  },
} as const;

const decisionReply = {
  type: 'object', required: ['status'],
  properties: {
    status: { enum: ['pending', 'approved', 'rejected', 'escalated', 'ended'], description: '`ended`: the session\'s run ended (a stop) before a decision' },
    comment: { type: ['string', 'null'] },
    decidedBy: {
      type: ['object', 'null'], required: ['userId', 'role'],
      properties: { userId: { type: 'string' }, role: { type: 'string' }, email: { type: ['string', 'null'] } },
    },
    decidedAt: { type: ['string', 'null'], format: 'date-time' },
    sessionStatus: { type: 'string' },
  },
} as const;

/** Reports the phase on the worker's behalf (the session machine takes it as a repeat of the run's status). */
async function setPhase(deps: Deps, orgId: string, run: SessionRun, phase: string): Promise<void> {
  if (run.workerId === null) return;
  try {
    await deps.ask<SessionReply>(sessionAddress(run.key), {
      type: 'session.transition', status: run.status as ReportableStatus, workerId: run.workerId, orgId, projectIds: [run.projectId], phase,
    });
  } catch (err) {
    // The session moved on meanwhile (a stop, an end): its phase no longer matters, the request stands.
    deps.log.debug({ err, sessionId: run.publicId }, 'agent line: phase not reported');
  }
}

/** Opens the gate, keeps what the approver is shown beside its title, and marks the session as waiting. */
async function openRequest(
  deps: Deps, claims: SessionClaims, run: SessionRun,
  what: { kind: AgentRequestKind; summary: string; title: string; details: string | null; toolName: string | null; toolInput: unknown; key: string | undefined },
): Promise<{ id: string; status: 'pending'; kind: AgentRequestKind; summary: string }> {
  const gateId = what.key === undefined ? randomUUID() : keyedGateId(claims, run, what.kind, what.key);
  const recorded = await recordAgentRequestWithin(deps.db, {
    gateId, orgId: claims.org, sessionKey: run.key, epoch: claims.ep, kind: what.kind, summary: what.summary, details: what.details,
    toolName: what.toolName, toolInput: what.toolInput, createdAt: new Date(deps.clock.now()),
  }, MAX_OPEN_REQUESTS);
  // A retry answers the request already made, opening its gate only if the first try stopped before it did.
  if (recorded === 'full') throw new TroupeError('CONFLICT', `this run already waits on ${MAX_OPEN_REQUESTS} undecided requests`, { limit: MAX_OPEN_REQUESTS });
  const reply = { id: gateId, status: 'pending' as const, kind: what.kind, summary: what.summary };
  if (recorded === 'exists' && (await findGate(deps.db, claims.org, gateId)) !== undefined) return reply;
  const msg: GateMsg = {
    type: 'gate.open', orgId: claims.org, projectId: run.projectId, title: what.title, issue: null,
    sessionId: run.publicId, runId: null, nodeId: null, escalation: null, requiredRole: null,
  };
  await deps.ask<GateView>(approvalGateAddress(gateId), msg);
  await setPhase(deps, claims.org, run, WAITING_PHASE);
  return reply;
}

/**
 * The gate a keyed request opens: the same key in the same run names the same gate, so an agent that retries after a
 * lost answer waits on the gate it opened rather than asking a person twice.
 */
function keyedGateId(claims: SessionClaims, run: SessionRun, kind: AgentRequestKind, key: string): string {
  const h = createHash('sha256').update(`${claims.org}\0${run.key}\0${claims.ep}\0${kind}\0${key}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The worker running the session, as Cedar's principal for `agent-tool`: the agent acts through it. */
const workerPrincipal = (claims: SessionClaims, run: SessionRun): Principal => ({
  kind: 'runtime', workerId: run.workerId ?? claims.wid, orgId: claims.org, projectIds: [run.projectId], registrationId: '', scopes: [],
});

export function agentAskRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/sessions/:id/agent/approvals', auth: 'none', tags: ['agent-line'],
      summary: "The session's agent asks a person to approve something: opens an approval gate linked to the session",
      description: 'Takes the session token (`Authorization: Bearer <TROUPE_SESSION_TOKEN>`). The gate appears in the approvals '
        + 'inbox (`GET /api/approval-gates`, its title the summary; the details at `GET /api/approval-gates/{id}/agent-request`) '
        + "and is pushed to its deciders; the session's phase is `waiting for approval` until it is decided. Wait for the "
        + 'decision with `GET /api/sessions/{id}/agent/approvals/{gateId}`.',
      bodySchema: {
        type: 'object', additionalProperties: false, required: ['summary'],
        properties: { summary: { type: 'string', minLength: 1, maxLength: TITLE_MAX }, details: { type: 'string', maxLength: 20_000 }, key: requestKey },
      },
      successStatus: 201, responseSchema: requestReply,
      async handler(req, deps) {
        const { claims, run } = await agentCaller(req, deps);
        const summary = req.body.summary.trim();
        if (summary === '') throw new TroupeError('VALIDATION_FAILED', 'summary is empty');
        const details = req.body.details === undefined ? null : visibleText(req.body.details);
        const reply = await openRequest(deps, claims, run, {
          kind: 'approval', summary: visibleText(summary, { keepNewlines: false }), title: agentGateTitle('Agent asks', summary, TITLE_MAX),
          details, toolName: null, toolInput: null, key: req.body.key,
        });
        return { status: 201, body: reply };
      },
    }),
    route({
      method: 'post', path: '/api/sessions/:id/agent/tool-permissions', auth: 'none', tags: ['agent-line'],
      summary: "The session's agent asks to use a tool: allowed at once where policy permits `agent-tool` on it, else a person decides",
      description: 'Takes the session token. Cedar decides first: the action `agent-tool`, the resource `AgentTool::"<toolName>"` '
        + "in the session's project, the principal the worker running it. Allowed → 200 `{decision: allowed}` and nothing is "
        + 'opened. Otherwise an approval gate titled with the tool and its input is opened as for `agent/approvals` (201 '
        + '`{decision: pending, request}`), and the full input is shown to the approver.',
      bodySchema: {
        type: 'object', additionalProperties: false, required: ['toolName', 'input'],
        properties: {
          toolName: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_.:-]+$' },
          input: { type: 'object' },
          key: requestKey,
        },
      },
      responseSchema: {
        type: 'object', required: ['decision'],
        properties: {
          decision: { enum: ['allowed', 'pending'] },
          policies: { type: 'array', items: { type: 'string' }, description: 'The policies that allowed it' },
          request: requestReply,
        },
      },
      async handler(req, deps) {
        const { claims, run } = await agentCaller(req, deps);
        const { toolName, input } = req.body;
        const decided = await deps.authz.check(workerPrincipal(claims, run), 'agent-tool', {
          type: 'AgentTool', id: toolName, orgId: claims.org, projectId: run.projectId,
        });
        if (decided.allowed) return { body: { decision: 'allowed', policies: [...decided.determiningPolicies] } };
        const inputText = JSON.stringify(input);
        if (inputText.length > 100_000) throw new TroupeError('VALIDATION_FAILED', 'the tool input is over 100,000 characters');
        const request = await openRequest(deps, claims, run, {
          kind: 'tool', summary: `Allow ${toolName}`, title: agentGateTitle(`Agent tool ${toolName}`, inputText, TITLE_MAX), details: null, toolName, toolInput: input, key: req.body.key,
        });
        return { status: 201, body: { decision: 'pending', request } };
      },
    }),
    waitRoute(),
  ];
}

function waitRoute(): Route<Deps> {
  return route({
    method: 'get', path: '/api/sessions/:id/agent/approvals/:gateId', auth: 'none', tags: ['agent-line'],
    summary: "An agent's request as it stands, waiting up to `waitSeconds` for a person's decision or the end of the run",
    description: 'Takes the session token; answers also after the run ended (then `status: ended` with the session\'s status, '
      + 'unless the request was decided first). `waitSeconds` (0–30, default 25) holds the request open until something '
      + 'changes; `pending` means nothing did: ask again.',
    querySchema: {
      type: 'object', additionalProperties: false,
      properties: { waitSeconds: { type: 'string', pattern: '^([0-9]|[12][0-9]|30)$', description: 'Seconds to wait, 0–30' } },
    },
    responseSchema: decisionReply,
    async handler(req, deps) {
      const { claims, run } = await agentCaller(req, deps, false);
      const gateId = req.params.gateId ?? '';
      const request = /^[0-9a-f-]{36}$/.test(gateId) ? await findAgentRequest(deps.db, claims.org, gateId) : undefined;
      if (request === undefined || request.sessionKey !== run.key || request.epoch !== claims.ep) throw new TroupeError('NOT_FOUND', 'request not found');
      const waitSeconds = Math.min(Number(req.query.get('waitSeconds') ?? DEFAULT_WAIT_SECONDS), MAX_WAIT_SECONDS);
      const until = deps.clock.now() + waitSeconds * 1000;
      const release = holdWait(deps, `${claims.org}:${run.key}:${claims.ep}`);
      try {
        const waits = approvalWaits(deps);
        await waits.ready();
        for (;;) {
          const answer = await requestState(deps, claims, gateId);
          if (answer !== undefined) return { body: answer };
          // A draining node answers at once: the agent asks again, of a node that stays.
          if (deps.clock.now() >= until || !deps.services.drain.serving) {
            return { body: { status: 'pending', comment: null, decidedBy: null, decidedAt: null, sessionStatus: run.status } };
          }
          await waits.next(claims.org, gateId, run.publicId, Math.min(FALLBACK_LOOK_MS, until - deps.clock.now()));
        }
      } finally {
        release();
      }
    },
  });
}

/**
 * Waits held open per run on this node, at most MAX_WAITS_PER_RUN: each costs the database two reads a look, and an
 * agent (or a prompt injected into it) must not multiply them (a review of issue 35 §3). Counted per node, in a map
 * kept per `Deps`, so nodes sharing a process share nothing.
 */
const MAX_WAITS_PER_RUN = 4;
const waitsByNode = new WeakMap<Deps, Map<string, number>>();

function holdWait(deps: Deps, run: string): () => void {
  let waits = waitsByNode.get(deps);
  if (waits === undefined) waitsByNode.set(deps, (waits = new Map()));
  const held = waits.get(run) ?? 0;
  if (held >= MAX_WAITS_PER_RUN) {
    throw new TroupeError('RATE_LIMITED', `this run already waits on ${MAX_WAITS_PER_RUN} requests on this node; wait on one at a time`, { retryAfterSeconds: 1 });
  }
  waits.set(run, held + 1);
  return () => {
    const left = (waits.get(run) ?? 1) - 1;
    if (left <= 0) waits.delete(run);
    else waits.set(run, left);
  };
}

/** The decision when there is one (and the phase it leaves), `ended` when the run ended first; undefined while pending. */
async function requestState(deps: Deps, claims: SessionClaims, gateId: string): Promise<Record<string, unknown> | undefined> {
  const [gate, run] = await Promise.all([findGate(deps.db, claims.org, gateId), sessionRun(deps.db, claims.org, claims.sid)]);
  if (gate === undefined || run === undefined) throw new TroupeError('NOT_FOUND', 'request not found');
  const live = run.epoch === claims.ep && run.workerId === claims.wid && ['claimed', 'running', 'paused', 'finalizing'].includes(run.status);
  if (gate.status !== 'pending') {
    if (live && (await undecidedRequests(deps.db, claims.org, run.key, run.epoch)) === 0) await setPhase(deps, claims.org, run, DECIDED_PHASE);
    const decider = gate.decidedBy as { userId: string; role: string } | null;
    const email = decider === null ? null : await deps.db('users').where({ id: decider.userId }).first('email').then((u) => u?.email ?? null);
    return {
      status: gate.status, comment: gate.comment, decidedBy: decider === null ? null : { ...decider, email },
      decidedAt: gate.decidedAt, sessionStatus: run.status,
    };
  }
  if (!live) return { status: 'ended', comment: null, decidedBy: null, decidedAt: null, sessionStatus: run.epoch === claims.ep ? run.status : 'ended' };
  return undefined;
}
