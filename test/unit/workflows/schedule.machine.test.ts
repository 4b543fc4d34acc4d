// Invariant: a schedule fires each due fire once, with its next fire durable in the same decision; a fire late by
// more than the catch-up window, and every earlier fire missed meanwhile, is recorded skipped (never a burst); a
// republish moves it to the new version, anything else ends it; the table is walked pair by pair.
import { expect } from 'chai';
import { runCommand, harnessNow } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import { createScheduleBehavior } from '../../../actors/kinds/workflow-schedule/actor.js';
import { scheduledRunId, type ScheduleEffect, type ScheduleMsg, type ScheduleReply, type ScheduleState } from '../../../actors/kinds/workflow-schedule/machine.js';
import { triggerOf } from '../../../actors/kinds/workflow/trigger.js';
import { CronSchedule } from '../../../actors/kinds/workflow-schedule/cron.js';

const ORG = '00000000-0000-4000-8000-000000000001';
const PROJECT = '00000000-0000-4000-8000-000000000002';
const WF = '00000000-0000-4000-8000-000000000003';
const behavior = createScheduleBehavior({ arm: () => undefined, startRun: () => Promise.reject(new Error('unused')) });
const everyTwoSeconds = { type: 'schedule', cron: '*/2 * * * * *', timezone: 'UTC', overlap: 'skip', catchupWindowSeconds: 60 } as const;
const configure = (workflowVersion: number, publishedVersion: number | null, trigger: Record<string, unknown> = everyTwoSeconds) =>
  ({ type: 'schedule.configure', orgId: ORG, projectId: PROJECT, workflowVersion, publishedVersion, trigger });

type Live = Extract<ScheduleState, { orgId: string }>;
function scheduled(now = harnessNow): Live {
  const r = runCommand(behavior, { status: 'absent' }, configure(2, 2), { now, id: WF });
  if (!r.ok) throw new Error(r.rejection.message);
  return r.state as Live;
}
const withPending = (s: Live): Live => ({ ...s, pending: { fireTime: harnessNow, runId: scheduledRunId(WF, harnessNow), version: 2 } });

walkTable<ScheduleState, ScheduleMsg, ScheduleReply, ScheduleEffect>(behavior, {
  title: 'schedule machine table',
  statesIn: (status) => {
    if (status === 'absent') return [{ status: 'absent' }];
    const s = scheduled();
    const paused: Live = { ...s, paused: { at: harnessNow, by: 'user:u1' } };
    return status === 'active'
      ? [s, withPending(s), paused]
      : [{ ...s, status: 'ended', nextFireAt: null }, { ...withPending(s), status: 'ended', nextFireAt: null }, { ...paused, status: 'ended', nextFireAt: null }];
  },
  messagesOf: (type, state) => {
    if (type === 'schedule.configure') return [configure(3, 3), configure(3, null), configure(3, 3, { type: 'manual' })];
    if (type === 'schedule.tick') return [{ type }];
    if (type === 'schedule.pause' || type === 'schedule.resume') return [{ type, orgId: ORG, by: 'user:u2' }];
    const pending = state.status === 'absent' ? null : state.pending;
    return [{ type, fireTime: pending?.fireTime ?? harnessNow, runId: pending?.runId ?? scheduledRunId(WF, harnessNow), outcome: 'started' }];
  },
  ctx: { now: harnessNow + 2_000, id: WF },
  refusedWith: () => 'ILLEGAL_TRANSITION',
});

const effectsOf = <T extends ScheduleEffect['type']>(effects: readonly ScheduleEffect[], type: T) =>
  effects.filter((e): e is Extract<ScheduleEffect, { type: T }> => e.type === type);

describe('schedule machine', () => {
  it('starts on the first scheduled deployment with the next fire after now, and arms it', () => {
    const r = runCommand(behavior, { status: 'absent' }, configure(1, 1), { now: harnessNow + 500, id: WF });
    if (!r.ok) throw new Error(r.rejection.message);
    expect(r.state).to.include({ status: 'active', nextFireAt: harnessNow + 2_000, version: 1 });
    expect(effectsOf(r.effects, 'arm')).to.deep.equal([{ type: 'arm', at: harnessNow + 2_000 }]);
    const manual = runCommand(behavior, { status: 'absent' }, configure(1, 1, { type: 'manual' }), { id: WF });
    expect(manual.ok && manual.changed).to.equal(false);
  });

  it('fires a due fire once: next fire and pending run in one state, a second tick only retries that start', () => {
    const s = scheduled(harnessNow - 1_000); // next fire at harnessNow
    const due = runCommand(behavior, s, { type: 'schedule.tick' }, { now: harnessNow + 15, id: WF });
    if (!due.ok) throw new Error(due.rejection.message);
    const state = due.state as Live;
    const runId = scheduledRunId(WF, harnessNow);
    expect(state.pending).to.deep.equal({ fireTime: harnessNow, runId, version: 2 });
    expect(state.nextFireAt).to.equal(harnessNow + 2_000);
    expect(effectsOf(due.effects, 'recordFires')[0]!.fires).to.deep.equal([{ fireTime: harnessNow, version: 2, outcome: 'starting', runId, detail: null }]);
    expect(effectsOf(due.effects, 'startRun')).to.have.length(1);
    const again = runCommand(behavior, state, { type: 'schedule.tick' }, { now: harnessNow + 30, id: WF });
    if (!again.ok) throw new Error(again.rejection.message);
    expect(again.changed).to.equal(false);
    expect(effectsOf(again.effects, 'startRun').map((e) => e.fire.runId)).to.deep.equal([runId]);
    const done = runCommand(behavior, state, { type: 'schedule.fired', fireTime: harnessNow, runId, outcome: 'started' }, { now: harnessNow + 40, id: WF });
    if (!done.ok) throw new Error(done.rejection.message);
    expect(done.state).to.include({ pending: null, lastRunId: runId });
    const early = runCommand(behavior, done.state, { type: 'schedule.tick' }, { now: harnessNow + 1_000, id: WF });
    expect(early.ok && early.changed).to.equal(false);
  });

  it('after an outage runs only the latest missed fire within the window and records the others skipped', () => {
    const s = scheduled(harnessNow - 1_000);
    const r = runCommand(behavior, s, { type: 'schedule.tick' }, { now: harnessNow + 10_500, id: WF });
    if (!r.ok) throw new Error(r.rejection.message);
    const fires = effectsOf(r.effects, 'recordFires')[0]!.fires;
    expect(fires.map((f) => [f.fireTime - harnessNow, f.outcome])).to.deep.equal([
      [0, 'skipped-missed'], [2_000, 'skipped-missed'], [4_000, 'skipped-missed'], [6_000, 'skipped-missed'], [8_000, 'skipped-missed'], [10_000, 'starting'],
    ]);
    expect(effectsOf(r.effects, 'startRun')).to.have.length(1);
    expect((r.state as Live).nextFireAt).to.equal(harnessNow + 12_000);
  });

  it('skips a fire older than the catch-up window, and starts nothing', () => {
    const s = { ...scheduled(harnessNow - 1_000), config: { ...everyTwoSeconds, catchupWindowSeconds: 5 } };
    const hourly: Live = { ...s, config: { ...s.config, cron: '0 * * * *' }, nextFireAt: harnessNow };
    const r = runCommand(behavior, hourly, { type: 'schedule.tick' }, { now: harnessNow + 60_000, id: WF });
    if (!r.ok) throw new Error(r.rejection.message);
    expect(effectsOf(r.effects, 'startRun')).to.deep.equal([]);
    expect(effectsOf(r.effects, 'recordFires')[0]!.fires.map((f) => f.outcome)).to.deep.equal(['skipped-missed']);
    expect((r.state as Live).pending).to.equal(null);
  });

  it('moves to a republished version keeping its next fire, ends when archived, and ignores older deployments', () => {
    const s = scheduled(harnessNow - 1_000);
    const moved = runCommand(behavior, s, configure(5, 5), { now: harnessNow - 500, id: WF });
    if (!moved.ok) throw new Error(moved.rejection.message);
    expect(moved.state).to.include({ status: 'active', version: 5, appliedVersion: 5, nextFireAt: harnessNow });
    const stale = runCommand(behavior, moved.state, configure(4, 4), { id: WF });
    expect(stale.ok && stale.changed).to.equal(false);
    const ended = runCommand(behavior, moved.state, configure(6, null), { id: WF });
    if (!ended.ok) throw new Error(ended.rejection.message);
    expect(ended.state).to.include({ status: 'ended', nextFireAt: null });
    const tick = runCommand(behavior, ended.state, { type: 'schedule.tick' }, { now: harnessNow + 60_000, id: WF });
    expect(tick.ok && tick.changed).to.equal(false);
    const foreign = runCommand(behavior, s, { ...configure(9, 9), orgId: PROJECT }, { id: WF });
    expect(foreign.ok ? 'accepted' : foreign.rejection.code).to.equal('NOT_FOUND');
  });
});

describe('schedule triggers in definitions', () => {
  it('fills the defaults and checks the cron expression and the zone', () => {
    expect(triggerOf({ type: 'schedule', cron: '0 9 * * 1-5' })).to.deep.equal({ type: 'schedule', cron: '0 9 * * 1-5', timezone: 'UTC', overlap: 'skip', catchupWindowSeconds: 60 });
    expect(() => triggerOf({ type: 'schedule', cron: '* * * *' })).to.throw(/definitionYaml.trigger.cron/);
    expect(() => triggerOf({ type: 'schedule', cron: '* * * * * * *' })).to.throw(/definitionYaml.trigger.cron/);
    expect(() => triggerOf({ type: 'schedule', cron: '0 0 30 2 *' })).to.throw(/never fires/);
    expect(() => triggerOf({ type: 'schedule', cron: '0 9 * * *', timezone: 'Mars/Olympus' })).to.throw(/timezone/);
  });

  it('evaluates 6-field expressions with seconds and in the named zone', () => {
    expect(new CronSchedule('*/2 * * * * *', 'UTC').nextFires(Date.UTC(2025, 0, 1, 0, 0, 1), 2)).to.deep.equal([Date.UTC(2025, 0, 1, 0, 0, 2), Date.UTC(2025, 0, 1, 0, 0, 4)]);
    // 09:30 in New York in January is 14:30 UTC.
    expect(new CronSchedule('30 9 * * *', 'America/New_York').nextAfter(Date.UTC(2025, 0, 1))).to.equal(Date.UTC(2025, 0, 1, 14, 30));
  });
});
