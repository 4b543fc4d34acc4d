// Invariant: every status × message pair of the workflow, run and approval-gate machines is either in the
// transition table (and lands on a listed status) or is an explicit rejection that changes nothing; versions count
// up by one per accepted change; a run walks conditions and bounded loops without waiting.
import { expect } from 'chai';
import { runCommand } from '../../support/harness.js';
import { createWorkflowBehavior } from '../../../actors/workflow/actor.js';
import { transitions as workflowTable, workflowMsgTypes, workflowStatuses, type WorkflowState } from '../../../actors/workflow/machine.js';
import { createWorkflowRunBehavior } from '../../../actors/workflow-run/actor.js';
import { runStatuses, runMsgTypes, transitions as runTable, type RunState, type LiveRun } from '../../../actors/workflow-run/machine.js';
import { createApprovalGateBehavior } from '../../../actors/approval-gate/actor.js';
import { gateStatuses, gateMsgTypes, transitions as gateTable, type GateState } from '../../../actors/approval-gate/machine.js';
import { analyseDefinition } from '../../../actors/workflow/definition.js';

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
const workflowMsg = (type: string) => ({
  'workflow.create': { type, orgId: ORG, projectId: PROJECT, content: { name: 't', definitionYaml: yaml }, actor },
  'workflow.update': { type, orgId: ORG, changes: { name: 'u' }, actor, mayPublish: true },
  'workflow.rollback': { type, orgId: ORG, toVersion: 1, content: { name: 'r', nodes: [], edges: [], viewport: {}, definitionYaml: yaml, triggerConfig: {}, providerRequirements: [], workflowConfig: {} }, actor, mayPublish: true },
}[type]!);

describe('workflow machine table', () => {
  for (const status of workflowStatuses) {
    for (const type of workflowMsgTypes) {
      it(`${status} × ${type}`, () => {
        const result = runCommand(workflow, workflowIn(status), workflowMsg(type));
        const allowed = workflowTable[status][type];
        if (!allowed) {
          expect(result.ok).to.equal(false);
          return;
        }
        expect(result.ok, JSON.stringify(result)).to.equal(true);
        if (result.ok) expect(allowed).to.include(result.state.status);
      });
    }
  }

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
});

function planOf(text: string) { return analyseDefinition(text).plan; }
const start = (text: string, input: Record<string, unknown> = {}) =>
  ({ type: 'run.start', orgId: ORG, projectId: PROJECT, workflowId: PROJECT, version: 1, plan: planOf(text), input, startedBy: 'user:u1' });

function runIn(status: (typeof runStatuses)[number]): RunState {
  if (status === 'absent') return { status };
  const r = runCommand(run, { status: 'absent' }, start(yaml));
  if (!r.ok) throw new Error('start failed');
  const live = r.state as LiveRun;
  const pending = status === 'running' ? { kind: 'agent' as const, nodeId: 'a', sessionId: 's1' }
    : status === 'waiting' ? { kind: 'wait' as const, nodeId: 'a', token: '1', wakeAt: 0 }
      : status === 'suspended' ? live.pending : null;
  return { ...live, status, pending };
}
const runMsg = (type: string, state: RunState) => {
  const pending = state.status === 'absent' ? null : state.pending;
  return {
    'run.start': start(yaml),
    'run.resume': { type },
    'run.wake': { type, token: '1' },
    'run.agentFinished': { type, sessionId: 's1', status: 'completed' },
    'run.gateDecided': { type, gateId: pending?.kind === 'gate' ? pending.gateId : 'g', decision: 'approved' },
  }[type]!;
};

describe('workflow-run machine table', () => {
  for (const status of runStatuses) {
    for (const type of runMsgTypes) {
      it(`${status} × ${type}`, () => {
        const state = runIn(status);
        const result = runCommand(run, state, runMsg(type, state));
        const allowed = runTable[status][type];
        if (!allowed) {
          expect(result.ok).to.equal(false);
          return;
        }
        expect(result.ok, JSON.stringify(result)).to.equal(true);
        if (result.ok) expect(allowed).to.include(result.state.status);
      });
    }
  }

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
const gateMsg = (type: string) => ({
  'gate.open': { type, orgId: ORG, projectId: PROJECT, title: 't', issue: null, sessionId: null, runId: null, nodeId: null, escalation: null, requiredRole: null },
  'gate.decide': { type, orgId: ORG, decision: 'escalated', decidedBy: { userId: 'u1', role: 'owner' } },
}[type]!);

describe('approval-gate machine table', () => {
  for (const status of gateStatuses) {
    for (const type of gateMsgTypes) {
      it(`${status} × ${type}`, () => {
        const result = runCommand(gate, gateIn(status), gateMsg(type));
        const allowed = gateTable[status][type];
        if (!allowed) {
          expect(result.ok).to.equal(false);
          return;
        }
        expect(result.ok, JSON.stringify(result)).to.equal(true);
        if (result.ok) expect(allowed).to.include(result.state.status);
      });
    }
  }

  it('makes the approver the driver of an escalate-to-live-session gate and tells its run', () => {
    const r = runCommand(gate, gateIn('pending'), gateMsg('gate.decide'));
    if (!r.ok) throw new Error(r.rejection.message);
    expect(r.reply.driver).to.equal('user:u1');
    expect(r.effects).to.deep.equal([{ type: 'notifyRun', runId: PROJECT, gateId: 'harness-id', decision: 'escalated', driver: 'user:u1' }]);
  });
});
