// Invariant: a run whose gate is escalated to a live session waits on that session and takes only its own report of
// the end (its session, its org, its driver); after a restart it re-dispatches the same session and, when that
// session has already ended, reports the end to itself in a form it takes. The older `escalation` spelling of
// `onEscalate` does the same.
import { expect } from 'chai';
import { runCommand } from '../../support/harness.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { createWorkflowRunBehavior } from '../../../actors/kinds/workflow-run/actor.js';
import type { LiveRun, RunEffect, RunMsg, RunState } from '../../../actors/kinds/workflow-run/machine.js';
import { analyseDefinition } from '../../../actors/kinds/workflow/definition.js';

const ORG = '00000000-0000-4000-8000-000000000001';
const OTHER_ORG = '00000000-0000-4000-8000-000000000009';
const PROJECT = '00000000-0000-4000-8000-000000000002';
const RUN = '00000000-0000-4000-8000-000000000003';
const DRIVER = 'user:00000000-0000-4000-8000-000000000004';
const definition = (spelling: 'onEscalate' | 'escalation') => `schemaVersion: v2
name: t
trigger: {type: manual}
nodes:
  - {id: gate, kind: approval, title: "Ship it?", ${spelling}: live-session}
`;
type Dispatch = Extract<RunEffect, { type: 'dispatchAgent' }>;

/** A run of `yaml` whose gate was just escalated by DRIVER: it waits on the live session. */
function escalated(yaml: string, dispatched: { status: string } | void = undefined) {
  const run = createWorkflowRunBehavior({ ask: () => Promise.reject(new Error('unused')), dispatchAgent: async () => dispatched });
  const started = runCommand(run, { status: 'absent' }, {
    type: 'run.start', orgId: ORG, projectId: PROJECT, workflowId: PROJECT, version: 1, plan: analyseDefinition(yaml).plan,
    input: { ticket: 'ENG-7' }, startedBy: 'user:u1',
  }, { id: RUN });
  if (!started.ok) throw new Error(started.rejection.message);
  const gateId = (started.state as LiveRun).steps[0]!.gateId!;
  const decided = runCommand(run, started.state, { type: 'run.gateDecided', gateId, decision: 'escalated', driver: DRIVER }, { id: RUN });
  if (!decided.ok) throw new Error(decided.rejection.message);
  return { run, state: decided.state, dispatch: decided.effects[0] as Dispatch };
}

const statusAfter = (r: ReturnType<typeof runCommand>) => (r.ok ? (r.state as RunState).status : r.rejection.code);

describe('workflow-run machine: a gate escalated to a live session', () => {
  for (const spelling of ['onEscalate', 'escalation'] as const) {
    it(`dispatches a session requested by the driver with the run's input (${spelling})`, () => {
      const { state, dispatch } = escalated(definition(spelling));
      expect(state.status).to.equal('running');
      expect(dispatch).to.include({ type: 'dispatchAgent', requestedBy: DRIVER, orgId: ORG, projectId: PROJECT, nodeId: 'gate' });
      expect(dispatch.prompt).to.contain('Ship it?').and.to.contain('{"ticket":"ENG-7"}');
    });
  }

  it('takes the end only from its session, reported with its org and driver', () => {
    const { run, state, dispatch } = escalated(definition('onEscalate'));
    const report = { type: 'run.agentFinished', sessionId: dispatch.sessionId, status: 'completed', orgId: ORG, requestedBy: DRIVER };
    for (const forged of [
      { ...report, orgId: OTHER_ORG },
      { ...report, requestedBy: 'user:someone-else' },
      { type: 'run.agentFinished', sessionId: dispatch.sessionId, status: 'completed' },
      { ...report, sessionId: '0123456789abcdef' },
    ]) {
      expect(statusAfter(runCommand(run, state, forged, { id: RUN })), JSON.stringify(forged)).to.equal('CONFLICT');
    }
    expect(statusAfter(runCommand(run, state, report, { id: RUN }))).to.equal('completed');
  });

  it('re-dispatches the same session on resume and takes the end it finds there', async () => {
    const { run, state, dispatch } = escalated(definition('onEscalate'), { status: 'failed' });
    const resumed = runCommand(run, state, { type: 'run.resume' }, { id: RUN });
    if (!resumed.ok) throw new Error(resumed.rejection.message);
    expect(resumed.effects).to.deep.equal([dispatch]);
    const told: RunMsg[] = [];
    await run.afterPersist!(resumed.effects, { id: RUN, address: `workflow-run/${RUN}`, tellSelf: (m) => told.push(m), log: silentLogger() });
    expect(told).to.have.length(1);
    const ended = runCommand(run, resumed.state, told[0]!, { id: RUN });
    expect(statusAfter(ended)).to.equal('failed');
    expect(ended.ok && (ended.state as LiveRun).error).to.contain("the live session of approval 'gate' ended failed");
  });
});
