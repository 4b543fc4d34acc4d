import type { Deps } from '../../deps.js';
import type { NodeService } from '../../node-service.js';
import { claimResend, giveUpDelivery, stuckDeliveries, type StuckDelivery } from '../../../../storage/integrations/webhook-resend.js';
import { publicSessionId, sessionAddress, sessionKey } from '../../../kinds/session/index.js';
import { providerEventAddress, sessionDispatchFor, startTriggeredRuns } from './actor.js';
import { startPinnedRun } from '../../../kinds/workflow-run/start-pinned.js';
import { webhookRunId } from './workflow-triggers.js';
import type { ProviderEventMsg, ProviderEventReply } from './machine.js';

/**
 * Re-drives provider deliveries that were recorded but never finished (decision 0014, known gaps): a crash between
 * the ingest's record and its hand-off, or between the provider-event actor's `routing` snapshot and its dispatch.
 * Every `TROUPE_WEBHOOK_RESEND_AFTER_MS`, deliveries still `received` that long after their arrival (or their last
 * re-send) are claimed one by one (one node wins each claim) and their stored route message is asked of their actor
 * again. An actor that never saw it routes it now; one that answers `routing` had lost its dispatch (or run starts)
 * effect, so the sweeper makes that dispatch (or starts those runs) itself and reports it back. Both are safe to repeat: the dispatch is keyed by the
 * tracker's id and the actor ignores a route it already handled. After MAX_RESENDS the delivery is recorded
 * failed instead of being tried forever.
 */
export const MAX_RESENDS = 5;
const BATCH = 50;

/** Sweeps every `TROUPE_WEBHOOK_RESEND_AFTER_MS` while the node runs; a sweep under way finishes before `stop` returns. */
export class WebhookSweeper implements NodeService {
  readonly name = 'webhook-sweeper';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  start(deps: Deps): void {
    this.timer = setInterval(() => {
      this.running ??= sweepStuckDeliveries(deps)
        .then(() => undefined, (err: unknown) => deps.log.warn({ err }, 'webhook sweep failed'))
        .finally(() => { this.running = undefined; });
    }, deps.config.webhookResendAfterMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}

/** One pass; returns how many deliveries it handed on again. Exported for tests and operators. */
export async function sweepStuckDeliveries(deps: Pick<Deps, 'db' | 'clock' | 'log' | 'ask' | 'config'>): Promise<number> {
  const now = deps.clock.now();
  const stuck = await stuckDeliveries(deps.db, new Date(now - deps.config.webhookResendAfterMs), MAX_RESENDS + 1, BATCH);
  let resent = 0;
  for (const delivery of stuck) {
    if (delivery.resendCount >= MAX_RESENDS) {
      await giveUpDelivery(deps.db, delivery.id, `not finished after ${MAX_RESENDS} re-sends`, new Date(now));
      continue;
    }
    if (!(await claimResend(deps.db, delivery, new Date(now)))) continue;
    resent += 1;
    await resend(deps, delivery).catch((err: unknown) => deps.log.warn({ err, eventId: delivery.id }, 'could not re-send a provider delivery'));
  }
  return resent;
}

async function resend(deps: Pick<Deps, 'ask' | 'log' | 'db'>, delivery: StuckDelivery): Promise<void> {
  const message = delivery.routeMessage as Extract<ProviderEventMsg, { type: 'providerEvent.route' }>;
  const address = providerEventAddress(delivery.id);
  const reply = await deps.ask<ProviderEventReply>(address, message);
  if (reply.status !== 'routing') return;
  if (message.action.kind === 'startRuns') {
    const runs = message.action.runs.map((r) => ({ ...r, runId: webhookRunId(delivery.id, r.workflowId) }));
    const started = await startTriggeredRuns({ startRun: (start) => startPinnedRun(deps, start) }, delivery.id, {
      type: 'startRuns', orgId: message.orgId, provider: message.provider, eventType: message.eventType, runs, input: message.action.input,
      ...(message.action.note === undefined ? {} : { note: message.action.note }),
    });
    await deps.ask(address, started);
    deps.log.info({ eventId: delivery.id, runIds: started.runIds }, 'a provider delivery stuck in routing started its runs');
    return;
  }
  if (message.action.kind !== 'dispatchSession' || message.projectId === null) return;
  const sessionId = publicSessionId(message.action.trackerSessionId);
  await deps.ask(sessionAddress(sessionKey(message.orgId, message.action.trackerSessionId)), sessionDispatchFor({
    orgId: message.orgId, projectId: message.projectId, trackerSessionId: message.action.trackerSessionId,
    trackerIssue: message.action.trackerIssue, prompt: message.action.prompt, provider: message.provider,
  }));
  await deps.ask(address, { type: 'providerEvent.dispatched', sessionId });
  deps.log.info({ eventId: delivery.id, sessionId }, 'a provider delivery stuck in routing was dispatched again');
}
