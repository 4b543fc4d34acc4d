import { createHash } from 'node:crypto';
import { accept, reject, type DecideContext, type Decision } from '../../runtime/machine.js';
import { choose, defineMachine, go, type Take } from '../../runtime/define-machine.js';
import type { Plan, PlanNode } from '../workflow/definition.js';
import { evaluate, parseExpression } from './expression.js';
import { trackerSessionIdFor } from './ports.js';
import { isReportOf, liveSessionPrompt, opensLiveSession } from './live-session.js';
import { publicSessionId, sessionKey } from '../session/machine.js';
import { runStatuses, MAX_RUN_STEPS, runMsgTypes, type RunStatus, type StepStatus, type Step, type Pending, type LiveRun, type RunState, type RunMsg, type RunMsgType, type RunEffect, type RunView } from './run-state.js';


/**
 * One workflow run (`workflow-run/<runId>`). It carries the compiled plan of the version it started on, so it
 * never reads the workflow again: publishes, rollbacks and restarts cannot change what it executes (spec 3.3).
 *
 * Statuses:
 * - absent: not started.
 * - running: an agent step's session, or the live session an escalated gate opened, is dispatched; waits for its
 *   terminal status (`run.agentFinished`).
 * - waiting: a wait step's timer is armed; `run.wake` with the step's token moves on once it is due.
 * - suspended: an approval gate is open; `run.gateDecided` resumes (approved, escalated) or fails (rejected). An
 *   escalate decision on a gate whose node says `onEscalate: live-session` runs a session driven by the approver
 *   first, and the gate's step takes that session's outcome (decision 0069).
 * - completed / failed: terminal.
 * Conditions and loops take no time: the walk passes through them within one decision. `run.resume` re-issues
 * the effect the run is waiting on (after a node restart); every effect is idempotent by a deterministic key.
 */

export { runStatuses, MAX_RUN_STEPS, runMsgTypes } from './run-state.js';
export type { RunStatus, StepStatus, Step, Pending, RunTrigger, LiveRun, RunState, RunMsg, RunMsgType, RunEffect, RunView } from './run-state.js';

export const initialRunState = (): RunState => ({ status: 'absent' });

type D = Decision<RunState, RunEffect, RunView>;
type On<T extends RunMsgType, To = readonly RunStatus[], In = LiveRun> =
  Take<RunState, Extract<RunMsg, { type: T }>, RunEffect, RunView, RunStatus, To, In>;

const start: On<'run.start', readonly RunStatus[], { status: 'absent' }> = (_state, msg, ctx) => {
  const started: LiveRun = {
    status: 'running', orgId: msg.orgId, projectId: msg.projectId, workflowId: msg.workflowId, version: msg.version,
    plan: msg.plan, input: msg.input, startedBy: msg.startedBy, trigger: msg.trigger ?? { kind: 'manual' }, createdAt: iso(ctx.now), updatedAt: iso(ctx.now),
    visits: 0, loopCounts: {}, steps: [], pending: null, error: null,
  };
  return walk(started, msg.plan.start ?? null, ctx);
};

/** After a restart: re-issue the effect the run waits on, or move on from a wait that fell due meanwhile. */
const resume: On<'run.resume', unknown> = (run, _msg, ctx) => {
  const { pending } = run;
  if (!pending) return accept(run, viewOf(ctx.id, run));
  if (pending.kind === 'wait' && ctx.now >= pending.wakeAt) return finishStep(run, { status: 'completed' }, null, ctx);
  return accept(run, viewOf(ctx.id, run), [effectFor(run, pending, ctx)]);
};

const wake: On<'run.wake'> = (run, msg, ctx) => {
  const { pending } = run;
  if (pending?.kind !== 'wait' || pending.token !== msg.token) return accept(run, viewOf(ctx.id, run));
  if (ctx.now < pending.wakeAt) return accept(run, viewOf(ctx.id, run), [effectFor(run, pending, ctx)]);
  return finishStep(run, { status: 'completed' }, null, ctx);
};

/** An agent step's session, or an escalated gate's live session, ended: the step takes its outcome. */
const agentFinished: On<'run.agentFinished'> = (run, msg, ctx) => {
  const pending = awaitedSession(run, msg);
  if (pending === null) return reject('CONFLICT', 'the run is not waiting for this session');
  if (msg.status === 'completed') return finishStep(run, { status: 'completed' }, null, ctx);
  const step = pending.kind === 'agent' ? `agent step '${pending.nodeId}'` : `the live session of approval '${pending.nodeId}'`;
  const error = `${step} ended ${msg.status}${msg.error ? `: ${msg.error.slice(0, 500)}` : ''}`;
  return finishStep(run, { status: 'failed', error }, error, ctx);
};

const gateDecided: On<'run.gateDecided'> = (run, msg, ctx) => {
  const { pending } = run;
  if (pending?.kind !== 'gate' || pending.gateId !== msg.gateId) return reject('CONFLICT', 'the run is not waiting for this gate');
  const extra = { decision: msg.decision, ...(msg.driver ? { driver: msg.driver } : {}) };
  if (msg.decision === 'rejected') return finishStep(run, { status: 'failed', ...extra }, `approval '${pending.nodeId}' was rejected`, ctx);
  const node = run.plan.nodes.find((n) => n.id === pending.nodeId);
  if (msg.decision === 'escalated' && msg.driver && node?.kind === 'approval' && opensLiveSession(node)) {
    return startLiveSession(run, node.id, msg.driver, ctx);
  }
  return finishStep(run, { status: 'completed', ...extra }, null, ctx);
};

/** The session the run waits on, when `msg` is its report. */
function awaitedSession(run: LiveRun, msg: Extract<RunMsg, { type: 'run.agentFinished' }>): Extract<Pending, { kind: 'agent' | 'liveSession' }> | null {
  const { pending } = run;
  if (pending?.kind === 'agent' && pending.sessionId === msg.sessionId) return pending;
  if (pending?.kind === 'liveSession' && pending.sessionId === msg.sessionId && isReportOf(run, pending, msg)) return pending;
  return null;
}

/**
 * The gate's step stays open, now running the approver's session under the gate's node: a fresh visit names it, so
 * it is derived like an agent step's session and a re-dispatch after a restart reaches the same one.
 */
function startLiveSession(run: LiveRun, nodeId: string, driver: string, ctx: DecideContext): D {
  if (run.visits >= MAX_RUN_STEPS) return fail(run, `the run exceeded ${MAX_RUN_STEPS} steps`, ctx);
  const visits = run.visits + 1;
  const pending: Pending = { kind: 'liveSession', nodeId, driver, sessionId: sessionIdFor(run.orgId, ctx.id, nodeId, visits) };
  const steps = run.steps.slice();
  const last = steps[steps.length - 1];
  if (last) steps[steps.length - 1] = { ...last, status: 'running', decision: 'escalated', driver, sessionId: shownSessionIdFor(ctx.id, nodeId, visits) };
  const next: LiveRun = { ...run, status: 'running', visits, pending, steps, updatedAt: iso(ctx.now) };
  return accept(next, viewOf(ctx.id, next), [effectFor(next, pending, ctx)]);
}

/**
 * Where a run goes once a step ends is wherever its plan leads (the next step that waits, the end, or a failure),
 * so those cells list every status a walk can stop in.
 */
const settled = ['running', 'waiting', 'suspended', 'completed', 'failed'] as const;
export const runMachine = defineMachine<RunState, RunMsg, RunEffect, RunView, RunStatus>({
  statuses: runStatuses,
  messageTypes: runMsgTypes,
  statusOf: (state) => state.status,
  refuse: (from, msg) => {
    if (from === 'absent') return reject('NOT_FOUND', 'run not found');
    if (msg.type === 'run.start') return reject('ALREADY_EXISTS', 'run already started');
    return reject('ILLEGAL_TRANSITION', `a ${from} run does not take ${msg.type}`);
  },
  table: {
    absent: { 'run.start': choose(settled, start) },
    running: { 'run.agentFinished': choose(settled, agentFinished), 'run.resume': go('running', resume) },
    waiting: { 'run.wake': choose(settled, wake), 'run.resume': choose(settled, resume) },
    suspended: { 'run.gateDecided': choose(settled, gateDecided), 'run.resume': go('suspended', resume) },
    completed: {},
    failed: {},
  },
});

export function viewOf(runId: string, run: LiveRun): RunView {
  return { runId, workflowId: run.workflowId, version: run.version, status: run.status, steps: run.steps, error: run.error };
}

/** Closes the pending step, then walks on from its node (or fails the run when `error` is set). */
function finishStep(run: LiveRun, outcome: Partial<Step> & { status: StepStatus }, error: string | null, ctx: DecideContext): D {
  const steps = run.steps.slice();
  const last = steps[steps.length - 1];
  if (last) steps[steps.length - 1] = { ...last, ...outcome, endedAt: iso(ctx.now) };
  const closed: LiveRun = { ...run, steps, pending: null, updatedAt: iso(ctx.now) };
  if (error !== null) {
    const failed: LiveRun = { ...closed, status: 'failed', error };
    return accept(failed, viewOf(ctx.id, failed));
  }
  return walk(closed, nextFrom(run.plan, run.pending?.nodeId ?? null, undefined), ctx);
}

/**
 * Walks from `nodeId` through instantaneous nodes (condition, loop, zero-second wait) until a node that has to
 * wait, the end of the graph, or the step limit.
 */
function walk(start: LiveRun, nodeId: string | null, ctx: DecideContext): D {
  let run = start;
  let current = nodeId;
  const now = iso(ctx.now);
  for (;;) {
    if (current === null) {
      const done: LiveRun = { ...run, status: 'completed', pending: null, updatedAt: now };
      return accept(done, viewOf(ctx.id, done));
    }
    const node = run.plan.nodes.find((n) => n.id === current);
    if (!node) return fail(run, `node '${current}' is not in the plan`, ctx);
    if (run.visits >= MAX_RUN_STEPS) return fail(run, `the run exceeded ${MAX_RUN_STEPS} steps`, ctx);
    const visit = run.visits + 1;
    run = { ...run, visits: visit, updatedAt: now };
    const base = { nodeId: node.id, kind: node.kind, startedAt: now } as const;
    switch (node.kind) {
      case 'agent': {
        const pending: Pending = { kind: 'agent', nodeId: node.id, sessionId: sessionIdFor(run.orgId, ctx.id, node.id, visit) };
        run = { ...run, status: 'running', pending, steps: [...run.steps, { ...base, status: 'running', sessionId: shownSessionIdFor(ctx.id, node.id, visit) }] };
        return accept(run, viewOf(ctx.id, run), [effectFor(run, pending, ctx)]);
      }
      case 'approval': {
        const pending: Pending = { kind: 'gate', nodeId: node.id, gateId: gateIdFor(ctx.id, node.id, visit) };
        run = { ...run, status: 'suspended', pending, steps: [...run.steps, { ...base, status: 'suspended', gateId: pending.gateId }] };
        return accept(run, viewOf(ctx.id, run), [effectFor(run, pending, ctx)]);
      }
      case 'wait': {
        if (node.seconds === 0) {
          run = { ...run, steps: [...run.steps, { ...base, status: 'completed', endedAt: now }] };
          current = nextFrom(run.plan, node.id, undefined);
          continue;
        }
        const wakeAt = ctx.now + node.seconds * 1000;
        const pending: Pending = { kind: 'wait', nodeId: node.id, token: String(visit), wakeAt };
        run = { ...run, status: 'waiting', pending, steps: [...run.steps, { ...base, status: 'waiting', wakeAt: iso(wakeAt) }] };
        return accept(run, viewOf(ctx.id, run), [effectFor(run, pending, ctx)]);
      }
      case 'condition': {
        let branch: boolean;
        try {
          branch = evaluate(parseExpression(node.when), { input: run.input, steps: stepScope(run.steps) });
        } catch {
          return fail(run, `condition '${node.id}' could not be evaluated`, ctx);
        }
        run = { ...run, steps: [...run.steps, { ...base, status: 'completed', branch, endedAt: now }] };
        current = nextFrom(run.plan, node.id, branch);
        continue;
      }
      case 'loop': {
        const done = run.loopCounts[node.id] ?? 0;
        const again = done < node.maxIterations;
        // Leaving the loop resets its count, so an outer loop re-entering it gets the full budget again.
        run = {
          ...run,
          loopCounts: { ...run.loopCounts, [node.id]: again ? done + 1 : 0 },
          steps: [...run.steps, { ...base, status: 'completed', branch: again, ...(again ? { iteration: done + 1 } : {}), endedAt: now }],
        };
        current = nextFrom(run.plan, node.id, again);
        continue;
      }
    }
  }
}

function fail(run: LiveRun, error: string, ctx: DecideContext): D {
  const failed: LiveRun = { ...run, status: 'failed', pending: null, error, updatedAt: iso(ctx.now) };
  return accept(failed, viewOf(ctx.id, failed));
}

/**
 * The node after `nodeId`. Plain nodes have at most one way out. Conditions and loops take the edge whose `when`
 * matches the branch; a missing `false` edge ends the run there.
 */
export function nextFrom(plan: Plan, nodeId: string | null, branch: boolean | undefined): string | null {
  if (nodeId === null) return null;
  const out = plan.edges.filter((e) => e.source === nodeId);
  const edge = branch === undefined ? out[0] : out.find((e) => (e.when ?? false) === branch);
  return edge?.target ?? null;
}

function effectFor(run: LiveRun, pending: Pending, ctx: DecideContext): RunEffect {
  const node = run.plan.nodes.find((n) => n.id === pending.nodeId);
  switch (pending.kind) {
    case 'agent': {
      const agent = node as Extract<PlanNode, { kind: 'agent' }>;
      // The node's own priority, else, in a run a webhook trigger started, the trigger's (decision 0085).
      const priority = agent.priority ?? (run.trigger?.kind === 'webhook' ? run.plan.webhookPriority : undefined);
      return {
        type: 'dispatchAgent', runId: ctx.id, orgId: run.orgId, projectId: run.projectId, nodeId: pending.nodeId,
        sessionId: pending.sessionId, trackerSessionId: trackerSessionIdFor(ctx.id, pending.nodeId, run.visits), prompt: agent.prompt,
        ...(agent.provider ? { provider: agent.provider } : {}), ...(agent.workType ? { workType: agent.workType } : {}),
        ...(agent.agentCardId ? { agentCardId: agent.agentCardId } : {}),
        ...(agent.repository ? { repository: agent.repository } : {}), ...(agent.ref ? { ref: agent.ref } : {}),
        ...(priority !== undefined ? { priority } : {}),
      };
    }
    case 'gate': {
      const gate = node as Extract<PlanNode, { kind: 'approval' }>;
      return {
        type: 'openGate', runId: ctx.id, orgId: run.orgId, projectId: run.projectId, nodeId: pending.nodeId,
        gateId: pending.gateId, title: gate.title,
        ...(gate.requiredRole ? { requiredRole: gate.requiredRole } : {}), ...(opensLiveSession(gate) ? { escalation: 'live-session' } : {}),
      };
    }
    case 'liveSession': {
      const gate = node as Extract<PlanNode, { kind: 'approval' }>;
      return {
        type: 'dispatchAgent', runId: ctx.id, orgId: run.orgId, projectId: run.projectId, nodeId: pending.nodeId,
        sessionId: pending.sessionId, trackerSessionId: trackerSessionIdFor(ctx.id, pending.nodeId, run.visits),
        prompt: liveSessionPrompt(gate, { runId: ctx.id, workflowName: run.plan.name, input: run.input, driver: pending.driver }),
        requestedBy: pending.driver,
      };
    }
    case 'wait':
      return { type: 'schedule', token: pending.token, delayMs: Math.max(0, pending.wakeAt - ctx.now) };
  }
}

function stepScope(steps: readonly Step[]): Record<string, unknown> {
  const scope: Record<string, unknown> = {};
  for (const s of steps) scope[s.nodeId] = { status: s.status, decision: s.decision ?? null, branch: s.branch ?? null };
  return scope;
}

/**
 * A run's session is derived from the run, node and visit, so a replayed dispatch names the same session. The run
 * addresses and waits on its key; its steps show its public id (schemas/sessions/session-ids.ts, decision 0068).
 */
export const sessionIdFor = (orgId: string, runId: string, nodeId: string, visit: number): string =>
  sessionKey(orgId, trackerSessionIdFor(runId, nodeId, visit));
const shownSessionIdFor = (runId: string, nodeId: string, visit: number): string => publicSessionId(trackerSessionIdFor(runId, nodeId, visit));

/** Gate ids are UUID-shaped and derived, so re-opening after a restart finds the same gate. */
export function gateIdFor(runId: string, nodeId: string, visit: number): string {
  const h = createHash('sha256').update(`gate:${runId}:${nodeId}:${visit}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const iso = (ms: number): string => new Date(ms).toISOString();

