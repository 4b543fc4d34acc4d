// Invariant: a paused schedule starts no run: every fire that comes due while paused is recorded `skipped-paused` and
// its next fire moves on; a fire already decided before the pause still finishes; resuming records the fires passed
// over since the last tick the same way and moves the next fire past now, so nothing is replayed; pausing what is
// paused and resuming what runs change nothing and audit nothing; a republish keeps the pause; another org's pause
// finds nothing; a snapshot from before pauses existed fires as before.
import { expect } from 'chai';
import { runCommand, harnessNow } from '../../support/harness.js';
import { createScheduleBehavior } from '../../../actors/kinds/workflow-schedule/actor.js';
import { scheduledRunId, type ScheduleEffect, type ScheduleState } from '../../../actors/kinds/workflow-schedule/machine.js';

const ORG = '00000000-0000-4000-8000-000000000001';
const PROJECT = '00000000-0000-4000-8000-000000000002';
const WF = '00000000-0000-4000-8000-000000000003';
const behavior = createScheduleBehavior({ arm: () => undefined, startRun: () => Promise.reject(new Error('unused')) });
const everyTwoSeconds = { type: 'schedule', cron: '*/2 * * * * *', timezone: 'UTC', overlap: 'skip', catchupWindowSeconds: 60 } as const;
const configure = (version: number) => ({ type: 'schedule.configure', orgId: ORG, projectId: PROJECT, workflowVersion: version, publishedVersion: version, trigger: everyTwoSeconds });
const pause = { type: 'schedule.pause', orgId: ORG, by: 'user:alice' } as const;
const resume = { type: 'schedule.resume', orgId: ORG, by: 'user:bob' } as const;

type Live = Extract<ScheduleState, { orgId: string }>;
type Result = ReturnType<typeof runCommand<ScheduleState, never, unknown, ScheduleEffect>>;

function accepted(r: Result): Extract<Result, { ok: true }> {
  if (!r.ok) throw new Error(r.rejection.message);
  return r;
}
const effectsOf = <T extends ScheduleEffect['type']>(effects: readonly ScheduleEffect[], type: T) =>
  effects.filter((e): e is Extract<ScheduleEffect, { type: T }> => e.type === type);

/** Active, its next fire at harnessNow, paused a second before it. */
function pausedSchedule(): Live {
  const s = accepted(runCommand(behavior, { status: 'absent' }, configure(2), { now: harnessNow - 1_500, id: WF })).state as Live;
  return accepted(runCommand(behavior, s, pause, { now: harnessNow - 1_000, id: WF })).state as Live;
}

describe('schedule machine: pause and resume', () => {
  it('pauses once: the pause is kept with who and when, audited; a second pause changes nothing', () => {
    const s = accepted(runCommand(behavior, { status: 'absent' }, configure(2), { now: harnessNow - 1_500, id: WF })).state as Live;
    const paused = accepted(runCommand(behavior, s, pause, { now: harnessNow - 1_000, id: WF }));
    expect((paused.state as Live).paused).to.deep.equal({ at: harnessNow - 1_000, by: 'user:alice' });
    expect(paused.reply).to.deep.include({ paused: { at: harnessNow - 1_000, by: 'user:alice' } });
    expect(effectsOf(paused.effects, 'audit')).to.deep.equal([{ type: 'audit', event: 'workflow.schedule_paused', by: 'user:alice', skipped: 0 }]);
    const again = accepted(runCommand(behavior, paused.state, { ...pause, by: 'user:carol' }, { now: harnessNow, id: WF }));
    expect(again.changed).to.equal(false);
    expect(again.effects).to.deep.equal([]);
    expect(again.reply).to.deep.include({ paused: { at: harnessNow - 1_000, by: 'user:alice' } });
  });

  it('records a due fire skipped-paused, starts no run, moves the next fire on and stays armed', () => {
    const r = accepted(runCommand(behavior, pausedSchedule(), { type: 'schedule.tick' }, { now: harnessNow + 20, id: WF }));
    expect(effectsOf(r.effects, 'startRun')).to.deep.equal([]);
    const [fire] = effectsOf(r.effects, 'recordFires')[0]!.fires;
    expect(fire).to.deep.include({ fireTime: harnessNow, outcome: 'skipped-paused', runId: null, version: 2 });
    expect(fire!.detail).to.contain('user:alice');
    expect(r.state).to.include({ pending: null, nextFireAt: harnessNow + 2_000 });
    expect(effectsOf(r.effects, 'arm')).to.deep.equal([{ type: 'arm', at: harnessNow + 2_000 }]);
  });

  it('records every fire missed while paused as skipped-paused, not skipped-missed, and runs none of them', () => {
    const r = accepted(runCommand(behavior, pausedSchedule(), { type: 'schedule.tick' }, { now: harnessNow + 6_500, id: WF }));
    const fires = effectsOf(r.effects, 'recordFires')[0]!.fires;
    expect(fires.map((f) => [f.fireTime - harnessNow, f.outcome])).to.deep.equal([
      [0, 'skipped-paused'], [2_000, 'skipped-paused'], [4_000, 'skipped-paused'], [6_000, 'skipped-paused'],
    ]);
    expect(effectsOf(r.effects, 'startRun')).to.deep.equal([]);
  });

  it('still finishes a fire decided before the pause', () => {
    const s = pausedSchedule();
    const pending: Live = { ...s, pending: { fireTime: harnessNow, runId: scheduledRunId(WF, harnessNow), version: 2 } };
    const r = accepted(runCommand(behavior, pending, { type: 'schedule.tick' }, { now: harnessNow + 20, id: WF }));
    expect(effectsOf(r.effects, 'startRun').map((e) => e.fire.runId)).to.deep.equal([scheduledRunId(WF, harnessNow)]);
  });

  it('resumes without replaying: fires passed over since the last tick are recorded skipped-paused, the next fire is after now', () => {
    const r = accepted(runCommand(behavior, pausedSchedule(), resume, { now: harnessNow + 4_500, id: WF }));
    const state = r.state as Live;
    expect(state.paused).to.equal(null);
    expect(state.nextFireAt).to.equal(harnessNow + 6_000);
    expect(effectsOf(r.effects, 'startRun')).to.deep.equal([]);
    expect(effectsOf(r.effects, 'recordFires')[0]!.fires.map((f) => [f.fireTime - harnessNow, f.outcome])).to.deep.equal([
      [0, 'skipped-paused'], [2_000, 'skipped-paused'], [4_000, 'skipped-paused'],
    ]);
    expect(effectsOf(r.effects, 'audit')).to.deep.equal([{ type: 'audit', event: 'workflow.schedule_resumed', by: 'user:bob', skipped: 3 }]);
    expect(effectsOf(r.effects, 'arm')).to.deep.equal([{ type: 'arm', at: harnessNow + 6_000 }]);
    // The next fire runs as usual.
    const next = accepted(runCommand(behavior, state, { type: 'schedule.tick' }, { now: harnessNow + 6_010, id: WF }));
    expect(effectsOf(next.effects, 'startRun').map((e) => e.fire.fireTime)).to.deep.equal([harnessNow + 6_000]);
    const twice = accepted(runCommand(behavior, state, resume, { now: harnessNow + 5_000, id: WF }));
    expect([twice.changed, twice.effects]).to.deep.equal([false, []]);
  });

  it('keeps the pause through a republish and an end; refuses another org; reads an old snapshot as not paused', () => {
    const republished = accepted(runCommand(behavior, pausedSchedule(), configure(3), { now: harnessNow - 500, id: WF }));
    expect((republished.state as Live).paused).to.deep.equal({ at: harnessNow - 1_000, by: 'user:alice' });
    const foreign = runCommand(behavior, pausedSchedule(), { ...resume, orgId: PROJECT }, { id: WF });
    expect(foreign.ok ? 'accepted' : foreign.rejection.code).to.equal('NOT_FOUND');
    const absent = runCommand(behavior, { status: 'absent' }, pause, { id: WF });
    expect(absent.ok ? 'accepted' : absent.rejection.code).to.equal('ILLEGAL_TRANSITION');

    const { paused: _dropped, ...old } = accepted(runCommand(behavior, { status: 'absent' }, configure(2), { now: harnessNow - 1_500, id: WF })).state as Live;
    const tick = accepted(runCommand(behavior, old as ScheduleState, { type: 'schedule.tick' }, { now: harnessNow + 20, id: WF }));
    expect(effectsOf(tick.effects, 'startRun')).to.have.length(1);
    expect(tick.reply).to.deep.include({ paused: null });
  });
});
