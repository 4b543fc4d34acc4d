// Invariant: every status × message pair of the workflow, run and approval-gate machines is either in the
// transition table (and lands on a listed status) or is an explicit rejection that changes nothing, and every target
// a table lists is reached from its pair; versions count up by one per accepted change; a run walks conditions and
// bounded loops without waiting.
import { expect } from 'chai';
import { runCommand } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import { createWorkflowBehavior } from '../../../actors/kinds/workflow/actor.js';
import { workflowStatuses, type WorkflowState } from '../../../actors/kinds/workflow/machine.js';
import { createWorkflowRunBehavior } from '../../../actors/kinds/workflow-run/actor.js';
import { runStatuses, type RunState, type LiveRun } from '../../../actors/kinds/workflow-run/machine.js';
import { createApprovalGateBehavior } from '../../../actors/kinds/approval-gate/actor.js';
import { gateStatuses, type GateState } from '../../../actors/kinds/approval-gate/machine.js';
import { analyseDefinition, type Plan, type PlanNode } from '../../../actors/kinds/workflow/definition.js';

const ORG = '00000000-0000-4000-8000-000000000001';
const PROJECT = '00000000-0000-4000-8000-000000000002';
const actor = { id: 'u1', label: 'user:u1' };
const yaml = 'schemaVersion: v2\nname: t\ntrigger: {type: manual}\nnodes:\n  - {id: a, kind: approval, title: "ok?"}\n';
const noAsk = () => Promise.reject(new Error('unused'));

const workflow = createWorkflowBehavior();
const run = createWorkflowRunBehavior({ ask: noAsk });
const gate = createApprovalGateBehavior({ ask: noAsk });

function workflowIn(status: (typeof workflowStatuses)[number]): WorkflowState {
  if (status === 'absent') return { status };
  const created = runCommand(workflow, { status: 'absent' }, { type: 'workflow.create', orgId: ORG, projectId: PROJECT, content: { name: 't', definitionYaml: yaml }, actor });
  if (!created.ok) throw new Error('create failed');
  return { ...(created.state as Extract<WorkflowState, { orgId: string }>), status };
}
const workflowMsgs = (type: string) => ({
  'workflow.create': [{ type, orgId: ORG, projectId: PROJECT, content: { name: 't', definitionYaml: yaml }, actor }],
  // Without a status an edit keeps the workflow's own; with one it moves it there.
  'workflow.update': [undefined, 'draft', 'published', 'archived'].map((status) =>
    ({ type, orgId: ORG, changes: { name: 'u' }, actor, mayPublish: true, ...(status ? { status } : {}) })),
  'workflow.rollback': [{ type, orgId: ORG, toVersion: 1, content: { name: 'r', nodes: [], edges: [], viewport: {}, definitionYaml: yaml, triggerConfig: {}, providerRequirements: [], workflowConfig: {} }, actor, mayPublish: true }],
}[type]!);

walkTable(workflow, {
  title: 'workflow machine table',
  statesIn: (status) => [workflowIn(status as (typeof workflowStatuses)[number])],
  messagesOf: workflowMsgs,
  refusedWith: (from) => (from === 'absent' ? 'NOT_FOUND' : 'ALREADY_EXISTS'),
});

describe('workflow machine', () => {
  it('counts versions up by one and refuses publish without authority or another org', () => {
    let state = workflowIn('draft');
    for (let i = 0; i < 3; i += 1) {
      const r = runCommand(workflow, state, { type: 'workflow.update', orgId: ORG, changes: {}, actor, mayPublish: false });
      if (!r.ok) throw new Error(r.rejection.message);
      state = r.state;
    }
    expect((state as { version: number }).version).to.equal(4);
    const denied = runCommand(workflow, state, { type: 'workflow.update', orgId: ORG, changes: {}, status: 'published', actor, mayPublish: false });
    expect(denied.ok ? 'accepted' : denied.rejection.code).to.equal('AUTHZ_DENIED');
    const foreign = runCommand(workflow, state, { type: 'workflow.update', orgId: PROJECT, changes: {}, actor, mayPublish: true });
    expect(foreign.ok ? 'accepted' : foreign.rejection.code).to.equal('NOT_FOUND');
    const invalid = runCommand(workflow, state, { type: 'workflow.update', orgId: ORG, changes: { definitionYaml: 'schemaVersion: v2' }, actor, mayPublish: true });
    expect(invalid.ok ? 'accepted' : invalid.rejection.code).to.equal('VALIDATION_FAILED');
  });

  it('refuses to take a workflow out of published without publish authority (issue 16)', () => {
    for (const status of ['draft', 'archived'] as const) {
      const leaving = runCommand(workflow, workflowIn('published'), { type: 'workflow.update', orgId: ORG, changes: {}, status, actor, mayPublish: false });
      expect(leaving.ok ? 'accepted' : leaving.rejection.code, `published → ${status}`).to.equal('AUTHZ_DENIED');
      const allowed = runCommand(workflow, workflowIn('published'), { type: 'workflow.update', orgId: ORG, changes: {}, status, actor, mayPublish: true });
      expect(allowed.ok ? (allowed.state as { status: string }).status : allowed.rejection.code).to.equal(status);
    }
    const archived = runCommand(workflow, workflowIn('archived'), { type: 'workflow.update', orgId: ORG, changes: {}, status: 'draft', actor, mayPublish: false });
    expect(archived.ok, 'archived → draft is an edit').to.equal(true);
  });
});

function planOf(text: string) { return analyseDefinition(text).plan; }
const start = (text: string, input: Record<string, unknown> = {}) =>
  ({ type: 'run.start', orgId: ORG, projectId: PROJECT, workflowId: PROJECT, version: 1, plan: planOf(text), input, startedBy: 'user:u1' });

/** What a walk meets after the step a run waits on: each stops it in another status ('ghost' is a broken plan). */
const afterwards = ['agent', 'wait', 'approval', 'end', 'ghost'] as const;
type Afterwards = (typeof afterwards)[number];
const nodeOf: Record<'agent' | 'wait' | 'approval', (id: string) => PlanNode> = {
  agent: (id) => ({ id, kind: 'agent', prompt: 'do it' }),
  wait: (id) => ({ id, kind: 'wait', seconds: 60 }),
  approval: (id) => ({ id, kind: 'approval', title: 'ok?' }),
};

/** A plan whose first node is `first`, followed by `then`. */
function planWith(first: Afterwards, then: Afterwards = 'end'): Plan {
  if (first === 'end') return { name: 'p', nodes: [], edges: [] };
  if (first === 'ghost') return { name: 'p', start: 'ghost', nodes: [], edges: [] };
  const nodes: PlanNode[] = [nodeOf[first]('first')];
  if (then === 'end') return { name: 'p', start: 'first', nodes, edges: [] };
  if (then !== 'ghost') nodes.push(nodeOf[then]('then'));
  return { name: 'p', start: 'first', nodes, edges: [{ source: 'first', target: 'then' }] };
}
const startWith = (plan: Plan) =>
  ({ type: 'run.start', orgId: ORG, projectId: PROJECT, workflowId: PROJECT, version: 1, plan, input: {}, startedBy: 'user:u1' });

/** Runs waiting in `status` on their first node, one for each thing that may come after it; a due wait. */
function runsIn(status: (typeof runStatuses)[number]): RunState[] {
  if (status === 'absent') return [{ status }];
  if (status === 'completed' || status === 'failed') {
    const r = runCommand(run, { status: 'absent' }, startWith(planWith(status === 'completed' ? 'end' : 'ghost')));
    if (!r.ok) throw new Error('start failed');
    return [r.state];
  }
  const first = ({ running: 'agent', waiting: 'wait', suspended: 'approval' } as const)[status];
  return afterwards.map((then) => {
    const r = runCommand(run, { status: 'absent' }, startWith(planWith(first, then)));
    if (!r.ok) throw new Error('start failed');
    const live = r.state as LiveRun;
    return live.pending?.kind === 'wait' ? { ...live, pending: { ...live.pending, wakeAt: 0 } } : live;
  });
}
const runMsgs = (type: string, state: RunState) => {
  const pending = state.status === 'absent' ? null : state.pending;
  return {
    'run.start': afterwards.map((first) => startWith(planWith(first))),
    'run.resume': [{ type }],
    'run.wake': [{ type, token: pending?.kind === 'wait' ? pending.token : '1' }],
    'run.agentFinished': ['completed', 'failed'].map((status) => ({ type, sessionId: pending?.kind === 'agent' ? pending.sessionId : 's1', status })),
    'run.gateDecided': ['approved', 'rejected'].map((decision) => ({ type, gateId: pending?.kind === 'gate' ? pending.gateId : 'g', decision })),
  }[type]!;
};

walkTable(run, {
  title: 'workflow-run machine table',
  statesIn: (status) => runsIn(status as (typeof runStatuses)[number]),
  messagesOf: runMsgs,
  refusedWith: (from, type) => (from === 'absent' ? 'NOT_FOUND' : type === 'run.start' ? 'ALREADY_EXISTS' : 'ILLEGAL_TRANSITION'),
});

describe('workflow-run machine', () => {
  it('branches on a condition and repeats a bounded loop in one decision', () => {
    const text = `schemaVersion: v2
name: c
trigger: {type: manual}
nodes:
  - {id: check, kind: condition, when: 'input.env == "prod"'}
  - {id: again, kind: loop, maxIterations: 3}
  - {id: tick, kind: wait, seconds: 0}
  - {id: stop, kind: approval, title: "prod?"}
edges:
  - {source: check, target: again, when: false}
  - {source: check, target: stop, when: true}
  - {source: again, target: tick, when: true}
  - {source: tick, target: again}
`;
    const dev = runCommand(run, { status: 'absent' }, start(text, { env: 'dev' }));
    if (!dev.ok) throw new Error(dev.rejection.message);
    expect(dev.state.status).to.equal('completed');
    expect((dev.state as LiveRun).steps.map((s) => s.nodeId)).to.deep.equal(['check', 'again', 'tick', 'again', 'tick', 'again', 'tick', 'again']);
    const prod = runCommand(run, { status: 'absent' }, start(text, { env: 'prod' }));
    if (!prod.ok) throw new Error(prod.rejection.message);
    expect(prod.state.status).to.equal('suspended');
    expect(prod.effects.map((e) => e.type)).to.deep.equal(['openGate']);
  });
});

function gateIn(status: (typeof gateStatuses)[number]): GateState {
  if (status === 'absent') return { status };
  return {
    status, orgId: ORG, projectId: PROJECT, title: 't', issue: null, sessionId: null, runId: PROJECT, nodeId: 'a',
    escalation: 'live-session', requiredRole: null, createdAt: new Date(0).toISOString(), decidedAt: null, decidedBy: null, driver: null,
  };
}
const gateMsgs = (type: string) => ({
  'gate.open': [{ type, orgId: ORG, projectId: PROJECT, title: 't', issue: null, sessionId: null, runId: null, nodeId: null, escalation: null, requiredRole: null }],
  'gate.decide': ['approved', 'rejected', 'escalated'].map((decision) => ({ type, orgId: ORG, decision, decidedBy: { userId: 'u1', role: 'owner' } })),
}[type]!);

walkTable(gate, {
  title: 'approval-gate machine table',
  statesIn: (status) => [gateIn(status as (typeof gateStatuses)[number])],
  messagesOf: gateMsgs,
  refusedWith: (from) => (from === 'absent' ? 'NOT_FOUND' : 'CONFLICT'),
});

describe('approval-gate machine', () => {
  it('makes the approver the driver of an escalate-to-live-session gate and tells its run', () => {
    const r = runCommand(gate, gateIn('pending'), gateMsgs('gate.decide')[2]!);
    if (!r.ok) throw new Error(r.rejection.message);
    expect(r.reply.driver).to.equal('user:u1');
    expect(r.effects).to.deep.equal([{ type: 'notifyRun', runId: PROJECT, gateId: 'harness-id', decision: 'escalated', driver: 'user:u1' }]);
  });
});
