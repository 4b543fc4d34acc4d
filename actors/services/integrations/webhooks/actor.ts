import type { Knex } from 'knex';
import type { ActorBehavior } from '../../../runtime/machine.js';
import { providerEventMessageSchema } from '../../../../schemas/integrations/provider-event.js';
import { writeWebhookOutcome } from '../../../../storage/integrations/webhook-events.js';
import { publicSessionId, sessionAddress, sessionKey, type SessionReply } from '../../../kinds/session/index.js';
import type { AskFn, DispatchBudget } from '../../../kinds/workflow-run/ports.js';
import type { PinnedRunOutcome, PinnedRunStart } from '../../../kinds/workflow-run/start-pinned.js';
import {
  providerEventMachine, initialProviderEventState, type ProviderEventEffect, type ProviderEventMsg, type ProviderEventReply,
  type ProviderEventState,
} from './machine.js';

/**
 * The provider-event actor: records each delivery's outcome in `provider_webhook_events` with its state, and
 * dispatches the session an event asks for once `routing` is durable. The dispatch is keyed by the tracker's id
 * (a repeat reaches the same session, which accepts a second dispatch while pending), so replaying the effect
 * after a crash does no harm.
 */
export const PROVIDER_EVENT_KIND = 'provider-event';
export const providerEventAddress = (eventId: string): string => `${PROVIDER_EVENT_KIND}/${eventId}`;
/** Recorded as the session's requester, so a session started by a webhook says where it came from. */
export const webhookRequester = (provider: string): string => `webhook:${provider}`;

/**
 * The session dispatch an event asks for; the same message from the actor's effect and from the webhook sweeper
 * re-driving a delivery stuck in routing (the session takes a repeated dispatch while pending).
 */
export function sessionDispatchFor(effect: Omit<Extract<ProviderEventEffect, { type: 'dispatchSession' }>, 'type'>): Record<string, unknown> {
  return {
    type: 'session.dispatch', orgId: effect.orgId, projectId: effect.projectId, trackerSessionId: effect.trackerSessionId,
    prompt: effect.prompt, agentCardId: null, trackerIssue: effect.trackerIssue, workType: null, provider: null,
    requestedBy: webhookRequester(effect.provider),
  };
}

export interface ProviderEventPorts {
  readonly ask: AskFn;
  /** Starts one pinned run (actors/kinds/workflow-run/start-pinned.ts); without it (unit tests) triggered runs fail. */
  readonly startRun?: (start: PinnedRunStart) => Promise<PinnedRunOutcome>;
  /** Refuses a session in a project over its monthly budget: the delivery is recorded failed with BUDGET_EXCEEDED. */
  readonly budget?: DispatchBudget;
}

export function createProviderEventBehavior(ports: ProviderEventPorts): ActorBehavior<ProviderEventState, ProviderEventMsg, ProviderEventReply, ProviderEventEffect> {
  return {
    kind: PROVIDER_EVENT_KIND,
    initial: initialProviderEventState,
    machine: providerEventMachine,
    messages: providerEventMessageSchema,
    async project(trx: Knex.Transaction, id: string, next: ProviderEventState, _previous, effects) {
      for (const effect of effects) {
        if (effect.type === 'sessionActivity') await noteOnSession(trx, id, effect, new Date(next.updatedAt));
      }
      if (!effects.some((e) => e.type === 'recordOutcome')) return;
      const status = next.status === 'routed' ? 'routed' : next.status === 'ignored' ? 'ignored' : 'failed';
      const outcome = { ...(next.detail === null ? {} : { detail: next.detail }), ...(next.runIds === undefined ? {} : { runIds: next.runIds }) };
      await writeWebhookOutcome(trx, id, { status, outcome, sessionId: next.sessionId, at: new Date(next.updatedAt) });
    },
    async afterPersist(effects, ctx) {
      for (const effect of effects) {
        if (effect.type === 'startRuns') {
          // A transient failure leaves the event routing; the webhook sweeper starts the same runs again later.
          const started = await startTriggeredRuns(ports, ctx.id, effect)
            .catch((err: unknown) => { ctx.log.warn({ err }, 'could not start the runs a provider event triggers; the sweeper will retry'); });
          if (started) ctx.tellSelf(started);
          continue;
        }
        if (effect.type !== 'dispatchSession') continue;
        const sessionId = publicSessionId(effect.trackerSessionId);
        try {
          await ports.budget?.(effect.orgId, effect.projectId);
          await ports.ask<SessionReply>(sessionAddress(sessionKey(effect.orgId, effect.trackerSessionId)), sessionDispatchFor(effect));
          ctx.tellSelf({ type: 'providerEvent.dispatched', sessionId });
        } catch (err) {
          ctx.log.warn({ err, sessionId }, 'a provider event could not dispatch its session');
          const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : 'UNKNOWN';
          ctx.tellSelf({ type: 'providerEvent.dispatchFailed', error: `session dispatch failed (${code})` });
        }
      }
    },
  };
}

/**
 * Starts every run a delivery triggers, each pinned to the version published when the delivery was accepted, and
 * says how it went as the `providerEvent.runsStarted` to record. Throws on a transient failure (nothing recorded):
 * the runs already started keep their ids, so a retry starts only the others.
 */
export async function startTriggeredRuns(
  ports: Pick<ProviderEventPorts, 'startRun'>, eventId: string, effect: Extract<ProviderEventEffect, { type: 'startRuns' }>,
): Promise<Extract<ProviderEventMsg, { type: 'providerEvent.runsStarted' }>> {
  const runIds: string[] = [];
  const failures: string[] = effect.note === undefined ? [] : [effect.note];
  for (const run of effect.runs) {
    if (!ports.startRun) {
      failures.push(`workflow ${run.workflowId}: no run starter on this node`);
      continue;
    }
    const outcome = await ports.startRun({
      orgId: effect.orgId, projectId: run.projectId, workflowId: run.workflowId, version: run.version, runId: run.runId,
      input: effect.input, startedBy: webhookRequester(effect.provider), trigger: { kind: 'webhook', eventId },
    });
    if (outcome.started) runIds.push(run.runId);
    else failures.push(`workflow ${run.workflowId}: ${outcome.detail}`);
  }
  return { type: 'providerEvent.runsStarted', runIds, failures };
}

/**
 * Writes a provider's note (a failed CI job) into the session's activities, which the session detail lists. The
 * session actor owns that table, but activities are append-only rows outside its state, so adding one here, in
 * this actor's snapshot transaction, keeps it exactly-once per delivery (key `webhook:<eventId>`) without a
 * session round trip. Tenancy holds in the statement itself: the row is copied only from a session of the event's
 * org, so a branch naming another org's session writes nothing.
 */
async function noteOnSession(
  trx: Knex.Transaction, eventId: string, effect: Extract<ProviderEventEffect, { type: 'sessionActivity' }>, at: Date,
): Promise<void> {
  await trx.raw(
    `insert into session_activities (id, session_id, org_id, kind, body, created_at)
     select ?, s.id, s.org_id, ?, ?, ? from sessions s where s.org_id = ? and (s.public_id = ? or s.id = ?)
     order by (s.id = ?) desc limit 1
     on conflict (id) do nothing`,
    [`webhook:${eventId}`, effect.kind, effect.body, at, effect.orgId, effect.sessionId, effect.sessionId, effect.sessionId],
  );
}
