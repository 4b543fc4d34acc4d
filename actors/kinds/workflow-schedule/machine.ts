import { accept, reject, type Decision } from '../../runtime/machine.js';
import { choose, defineMachine, go, type Take } from '../../runtime/define-machine.js';
import type { FireOutcome, FireRow } from '../../../storage/workflows/schedules.js';
import type { OverlapPolicy, Trigger } from '../workflow/trigger.js';
import { CronSchedule } from './cron.js';
import { derivedRunId } from '../workflow-run/start-pinned.js';

/**
 * A workflow's schedule (`workflow-schedule/<workflowId>`, issue 17; decision 0027): owned like any actor, so in a
 * cluster one node decides each fire, and a write by a node that lost the shard is fenced by the snapshot version.
 * Its next fire time is durable before a fire is acted on: a fire moves `nextFireAt` on and records the fire as
 * `pending` (with the run id derived from the fire time) in one snapshot; only then does the effect start the run,
 * and `schedule.fired` reports how it went. A crash in between leaves `pending`, and the next tick starts the same
 * run again (the run actor refuses a second start under the same id). So each fire starts at most one run, and a
 * fire is only ever lost by the catch-up rule.
 *
 * Statuses:
 * - absent: never scheduled (the workflow was never published with a schedule trigger).
 * - active: fires; `version` is the published version each fire starts a run of.
 * - ended: the workflow was archived, unpublished or given another trigger; a fire already decided still finishes.
 *
 * Messages:
 * - `schedule.configure`: the workflow's deployment at one of its versions (asked by whoever made a version that
 *   concerns a schedule, before that change answers, decision 0071; and again by the schedule service until applied).
 *   Older versions than the one applied change nothing.
 * - `schedule.tick`: someone thinks a fire may be due (this node's timer, or any node's scan for overdue fires). A
 *   tick that finds nothing due changes nothing, so any number of them is harmless.
 * - `schedule.fired`: the outcome of the pending fire's run start.
 * - `schedule.pause` / `schedule.resume` (decision 0079): while paused, a fire that comes due starts no run and is
 *   recorded `skipped-paused`; a fire already decided still finishes. Resuming moves the next fire past now, so the
 *   fires passed over while paused are never replayed. Each answers the pause as it is; only a change is audited.
 *   A republish or an end keeps the pause: only a resume lifts it.
 */
export const scheduleStatuses = ['absent', 'active', 'ended'] as const;
export type ScheduleStatus = (typeof scheduleStatuses)[number];

/** A tick this late after its fire still counts as on time: a timer's own delay is not a missed fire. */
export const ON_TIME_TOLERANCE_MS = 2_000;
/** Missed fires recorded as skipped at one recovery; older ones are only counted in the detail. */
export const MAX_RECORDED_MISSES = 20;

export interface ScheduleConfig {
  readonly cron: string;
  readonly timezone: string;
  readonly overlap: OverlapPolicy;
  readonly catchupWindowSeconds: number;
}

/** Who paused a schedule, and when. */
export interface SchedulePause {
  readonly at: number;
  readonly by: string;
}

export interface PendingFire {
  readonly fireTime: number;
  readonly runId: string;
  readonly version: number;
}

export type ScheduleState =
  | { readonly status: 'absent' }
  | {
      readonly status: 'active' | 'ended';
      readonly orgId: string;
      readonly projectId: string;
      /** The workflow version whose deployment this schedule last applied. */
      readonly appliedVersion: number;
      /** The published version fires start runs of (the last one, once ended). */
      readonly version: number;
      readonly config: ScheduleConfig;
      readonly nextFireAt: number | null;
      readonly pending: PendingFire | null;
      /** The last run a fire of this schedule started: what `overlap: skip` waits for. */
      readonly lastRunId: string | null;
      /** Absent in snapshots from before pausing existed: read as not paused. */
      readonly paused?: SchedulePause | null;
      readonly updatedAt: number;
    };
type LiveSchedule = Extract<ScheduleState, { orgId: string }>;

export type ScheduleMsg =
  | {
      readonly type: 'schedule.configure'; readonly orgId: string; readonly projectId: string;
      readonly workflowVersion: number; readonly publishedVersion: number | null; readonly trigger: Trigger;
    }
  | { readonly type: 'schedule.tick' }
  | {
      readonly type: 'schedule.fired'; readonly fireTime: number; readonly runId: string;
      readonly outcome: Extract<FireOutcome, 'started' | 'skipped-overlap' | 'failed'>; readonly detail?: string;
    }
  | { readonly type: 'schedule.pause'; readonly orgId: string; readonly by: string }
  | { readonly type: 'schedule.resume'; readonly orgId: string; readonly by: string };
export type ScheduleMsgType = ScheduleMsg['type'];
export const scheduleMsgTypes: readonly ScheduleMsgType[] = ['schedule.configure', 'schedule.tick', 'schedule.fired', 'schedule.pause', 'schedule.resume'];

export type ScheduleEffect =
  /** Fires to record in `workflow_schedule_fires`, in the snapshot transaction. */
  | { readonly type: 'recordFires'; readonly fires: readonly FireRow[] }
  /** Start the pending fire's run (or skip it if the last run is still live and overlap is `skip`), then report. */
  | {
      readonly type: 'startRun'; readonly orgId: string; readonly projectId: string; readonly fire: PendingFire;
      readonly overlap: OverlapPolicy; readonly lastRunId: string | null;
    }
  /** Wake this schedule at `at` (a timer on this node). */
  | { readonly type: 'arm'; readonly at: number }
  /** A pause or resume that changed the schedule: its audit entry, in the snapshot transaction. */
  | { readonly type: 'audit'; readonly event: 'workflow.schedule_paused' | 'workflow.schedule_resumed'; readonly by: string; readonly skipped: number };

export interface ScheduleReply {
  readonly status: ScheduleStatus;
  readonly nextFireAt: number | null;
  readonly pendingFireAt: number | null;
  readonly paused: SchedulePause | null;
}

export const initialScheduleState = (): ScheduleState => ({ status: 'absent' });

type D = Decision<ScheduleState, ScheduleEffect, ScheduleReply>;
type On<T extends ScheduleMsgType, To, In = LiveSchedule> =
  Take<ScheduleState, Extract<ScheduleMsg, { type: T }>, ScheduleEffect, ScheduleReply, ScheduleStatus, To, In>;

const replyOf = (s: ScheduleState): ScheduleReply => (s.status === 'absent'
  ? { status: 'absent', nextFireAt: null, pendingFireAt: null, paused: null }
  : { status: s.status, nextFireAt: s.nextFireAt, pendingFireAt: s.pending?.fireTime ?? null, paused: s.paused ?? null });
const unchanged = (s: ScheduleState, effects: readonly ScheduleEffect[] = []): D => accept(s, replyOf(s), effects);

/** The deployment schedules runs when the workflow is published with a schedule trigger. */
const scheduledBy = (msg: Extract<ScheduleMsg, { type: 'schedule.configure' }>): msg is typeof msg & { publishedVersion: number; trigger: Extract<Trigger, { type: 'schedule' }> } =>
  msg.trigger.type === 'schedule' && msg.publishedVersion !== null;

const configOf = (t: Extract<Trigger, { type: 'schedule' }>): ScheduleConfig =>
  ({ cron: t.cron, timezone: t.timezone, overlap: t.overlap, catchupWindowSeconds: t.catchupWindowSeconds });

const nextFire = (config: ScheduleConfig, afterMs: number): number | null => new CronSchedule(config.cron, config.timezone).nextAfter(afterMs);

/** The first deployment with a schedule starts it; any other leaves nothing to schedule. */
const start: On<'schedule.configure', readonly ScheduleStatus[], { status: 'absent' }> = (state, msg, { now }) => {
  if (!scheduledBy(msg)) return unchanged(state);
  const config = configOf(msg.trigger);
  const next: LiveSchedule = {
    status: 'active', orgId: msg.orgId, projectId: msg.projectId, appliedVersion: msg.workflowVersion, version: msg.publishedVersion,
    config, nextFireAt: nextFire(config, now), pending: null, lastRunId: null, paused: null, updatedAt: now,
  };
  return accept(next, replyOf(next), armed(next));
};

/**
 * A later deployment: republished (the schedule moves to the new version, and keeps its next fire unless the cron
 * expression or zone changed), or no longer scheduled (the schedule ends; a fire already decided still finishes).
 */
const reconfigure: On<'schedule.configure', readonly ScheduleStatus[]> = (state, msg, { now }) => {
  if (msg.workflowVersion <= state.appliedVersion) return unchanged(state);
  if (!scheduledBy(msg)) {
    const ended: LiveSchedule = { ...state, status: 'ended', appliedVersion: msg.workflowVersion, nextFireAt: null, updatedAt: now };
    return accept(ended, replyOf(ended));
  }
  const config = configOf(msg.trigger);
  const sameTimes = state.status === 'active' && state.nextFireAt !== null && config.cron === state.config.cron && config.timezone === state.config.timezone;
  const moved: LiveSchedule = {
    ...state, status: 'active', appliedVersion: msg.workflowVersion, version: msg.publishedVersion, config,
    nextFireAt: sameTimes ? state.nextFireAt : nextFire(config, now), updatedAt: now,
  };
  return accept(moved, replyOf(moved), armed(moved));
};

/**
 * A tick. A fire whose run start is unconfirmed is started again first (the same run id). Otherwise, once the next
 * fire is due: the latest fire due now runs if it is late by less than the catch-up window (or just a timer's
 * delay); every earlier fire missed meanwhile, and the latest too when it is older than the window, is recorded as
 * skipped, so a schedule coming back after an outage runs at most once, never a burst.
 */
const tick: On<'schedule.tick', 'active'> = (state, _msg, ctx) => {
  if (state.pending !== null) return unchanged(state, [startEffect(state, state.pending)]);
  if (state.nextFireAt === null) return unchanged(state);
  if (ctx.now < state.nextFireAt) return unchanged(state, armed(state));
  if (state.paused) return passOverWhilePaused(state, state.paused, ctx.now);
  const cron = new CronSchedule(state.config.cron, state.config.timezone);
  const latest = Math.max(cron.latestAtOrBefore(ctx.now) ?? state.nextFireAt, state.nextFireAt);
  const lateness = ctx.now - latest;
  const inTime = lateness <= Math.max(state.config.catchupWindowSeconds * 1000, ON_TIME_TOLERANCE_MS);
  const fires: FireRow[] = missedBefore(cron, state.nextFireAt, latest).map((fireTime) => ({
    fireTime, version: state.version, outcome: 'skipped-missed', runId: null, detail: 'missed while no node ran this schedule; a later fire was due',
  }));
  let pending: PendingFire | null = null;
  if (inTime) {
    pending = { fireTime: latest, runId: scheduledRunId(ctx.id, latest), version: state.version };
    fires.push({ fireTime: latest, version: state.version, outcome: 'starting', runId: pending.runId, detail: null });
  } else {
    fires.push({
      fireTime: latest, version: state.version, outcome: 'skipped-missed', runId: null,
      detail: `missed by ${Math.round(lateness / 1000)} s, more than the catch-up window of ${state.config.catchupWindowSeconds} s`,
    });
  }
  const next: LiveSchedule = { ...state, nextFireAt: cron.nextAfter(ctx.now), pending, updatedAt: ctx.now };
  return accept(next, replyOf(next), [
    { type: 'recordFires', fires },
    ...(pending === null ? [] : [startEffect(next, pending)]),
    ...armed(next),
  ]);
};

/** An ended schedule only finishes the fire it had decided before it ended. */
const tickEnded: On<'schedule.tick', 'ended'> = (state) =>
  unchanged(state, state.pending === null ? [] : [startEffect(state, state.pending)]);

const fired: On<'schedule.fired', readonly ScheduleStatus[]> = (state, msg, { now }) => {
  const { pending } = state;
  if (pending === null || pending.fireTime !== msg.fireTime || pending.runId !== msg.runId) return unchanged(state);
  const next: LiveSchedule = {
    ...state, pending: null, lastRunId: msg.outcome === 'started' ? pending.runId : state.lastRunId, updatedAt: now,
  };
  return accept(next, replyOf(next), [{
    type: 'recordFires',
    fires: [{
      fireTime: pending.fireTime, version: pending.version, outcome: msg.outcome,
      runId: msg.outcome === 'started' ? pending.runId : null, detail: msg.detail?.slice(0, 500) ?? null,
    }],
  }]);
};

/**
 * The fires due by `now` of a paused schedule: each recorded `skipped-paused` (the newest MAX_RECORDED_MISSES of
 * them), none started, and the next fire moved past `now`. Used by a tick while paused, and by the resume, so that a
 * fire passed over while paused is never run late.
 */
function passOverWhilePaused(state: LiveSchedule, paused: SchedulePause, now: number): D {
  const next = skipPaused(state, paused, now);
  return accept(next.state, replyOf(next.state), [...next.effects, ...armed(next.state)]);
}

function skipPaused(state: LiveSchedule, paused: SchedulePause, now: number): { state: LiveSchedule; effects: ScheduleEffect[]; skipped: number } {
  if (state.nextFireAt === null || state.nextFireAt > now) return { state, effects: [], skipped: 0 };
  const cron = new CronSchedule(state.config.cron, state.config.timezone);
  const latest = Math.max(cron.latestAtOrBefore(now) ?? state.nextFireAt, state.nextFireAt);
  const detail = `the schedule was paused by ${paused.by} at ${new Date(paused.at).toISOString()}`;
  const fires: FireRow[] = [...missedBefore(cron, state.nextFireAt, latest), latest]
    .map((fireTime) => ({ fireTime, version: state.version, outcome: 'skipped-paused', runId: null, detail }));
  const next: LiveSchedule = { ...state, nextFireAt: cron.nextAfter(now), updatedAt: now };
  return { state: next, effects: [{ type: 'recordFires', fires }], skipped: fires.length };
}

/** Pausing a paused schedule answers as it is and records nothing. */
const pause: On<'schedule.pause', readonly ScheduleStatus[]> = (state, msg, { now }) => {
  if (state.paused) return unchanged(state);
  const next: LiveSchedule = { ...state, paused: { at: now, by: msg.by }, updatedAt: now };
  return accept(next, replyOf(next), [{ type: 'audit', event: 'workflow.schedule_paused', by: msg.by, skipped: 0 }]);
};

/** Resuming records the fires due meanwhile that no tick has yet (as paused), so none of them runs late. */
const resume: On<'schedule.resume', readonly ScheduleStatus[]> = (state, msg, { now }) => {
  if (!state.paused) return unchanged(state);
  const passed = state.status === 'active' ? skipPaused(state, state.paused, now) : { state, effects: [], skipped: 0 };
  const next: LiveSchedule = { ...passed.state, paused: null, updatedAt: now };
  return accept(next, replyOf(next), [
    ...passed.effects,
    { type: 'audit', event: 'workflow.schedule_resumed', by: msg.by, skipped: passed.skipped },
    ...(next.status === 'active' ? armed(next) : []),
  ]);
};

const ignore = (state: ScheduleState): D => unchanged(state);

export const scheduleMachine = defineMachine<ScheduleState, ScheduleMsg, ScheduleEffect, ScheduleReply, ScheduleStatus>({
  statuses: scheduleStatuses,
  messageTypes: scheduleMsgTypes,
  statusOf: (state) => state.status,
  // A configure naming another org than the schedule's is a bug or forgery: it finds nothing.
  screen: (state, msg) => (state.status !== 'absent' && 'orgId' in msg && msg.orgId !== state.orgId
    ? reject('NOT_FOUND', 'schedule not found')
    : undefined),
  refuse: (from, msg) => reject('ILLEGAL_TRANSITION', `${msg.type} is not allowed on a ${from} schedule`, { from, msgType: msg.type }),
  table: {
    absent: { 'schedule.configure': choose(['active', 'absent'], start), 'schedule.tick': go('absent', ignore) },
    active: {
      'schedule.configure': choose(['active', 'ended'], reconfigure),
      'schedule.tick': go('active', tick),
      'schedule.fired': choose(['active'], fired),
      'schedule.pause': choose(['active'], pause),
      'schedule.resume': choose(['active'], resume),
    },
    ended: {
      'schedule.configure': choose(['active', 'ended'], reconfigure),
      'schedule.tick': go('ended', tickEnded),
      'schedule.fired': choose(['ended'], fired),
      'schedule.pause': choose(['ended'], pause),
      'schedule.resume': choose(['ended'], resume),
    },
  },
});

function startEffect(state: LiveSchedule, fire: PendingFire): ScheduleEffect {
  return { type: 'startRun', orgId: state.orgId, projectId: state.projectId, fire, overlap: state.config.overlap, lastRunId: state.lastRunId };
}

const armed = (s: LiveSchedule): ScheduleEffect[] => (s.nextFireAt === null ? [] : [{ type: 'arm', at: s.nextFireAt }]);

/** Fires after `from` (inclusive) and before `latest`, newest MAX_RECORDED_MISSES of them. */
function missedBefore(cron: CronSchedule, from: number, latest: number): number[] {
  const missed: number[] = [];
  let at = latest;
  while (missed.length < MAX_RECORDED_MISSES) {
    const earlier = cron.latestAtOrBefore(at - 1);
    if (earlier === null || earlier < from) break;
    missed.unshift(earlier);
    at = earlier;
  }
  return missed;
}

/** The run a fire starts: UUID-shaped, derived from the schedule and the fire time, so a retry names the same run. */
export const scheduledRunId = (workflowId: string, fireTime: number): string => derivedRunId(`schedule:${workflowId}:${fireTime}`);

