import { TroupeError } from '../../../ops/kernel/errors.js';
import {
  DEFAULT_CATCHUP_WINDOW_SECONDS, type ScheduleTrigger, type Trigger, type WebhookTrigger, type WebhookTriggerProvider,
} from '../../../schemas/workflows/definition.js';
import { CronSchedule } from '../workflow-schedule/cron.js';
import { FILTER_VISIT_LIMIT, filterVisitBound, MAX_WILDCARD_ELEMENTS } from '../../services/integrations/webhooks/filter-budget.js';

/**
 * A workflow's trigger as the execution layer deploys it (issue 17; decision 0027): the definition's `trigger`,
 * checked beyond its schema (the cron expression parses and fires at all, the time zone exists) and with its
 * defaults filled in, so a schedule or a webhook match never meets a value it has to guess about.
 */
export type { FilterValue, OverlapPolicy, ScheduleTrigger, Trigger, WebhookTrigger, WebhookTriggerProvider } from '../../../schemas/workflows/definition.js';

/** The trigger of a definition that has passed its schema (definition.ts); throws VALIDATION_FAILED otherwise. */
export function triggerOf(raw: Record<string, unknown>): Trigger {
  switch (raw.type) {
    case 'schedule': {
      const trigger: ScheduleTrigger = {
        type: 'schedule',
        cron: String(raw.cron).trim(),
        timezone: typeof raw.timezone === 'string' ? raw.timezone : 'UTC',
        overlap: raw.overlap === 'allow' ? 'allow' : 'skip',
        catchupWindowSeconds: typeof raw.catchupWindowSeconds === 'number' ? raw.catchupWindowSeconds : DEFAULT_CATCHUP_WINDOW_SECONDS,
      };
      if (!isTimeZone(trigger.timezone)) throw invalid('timezone', `'${trigger.timezone}' is not an IANA time zone`);
      let schedule: CronSchedule;
      try {
        schedule = new CronSchedule(trigger.cron, trigger.timezone);
      } catch (err) {
        throw invalid('cron', `is not a cron expression of 5 fields, or 6 with seconds first (${(err as Error).message.slice(0, 200)})`);
      }
      // Without a year field an expression that fires at all fires after any instant, so the epoch keeps this pure.
      if (schedule.nextAfter(0) === null) throw invalid('cron', 'never fires');
      return trigger;
    }
    case 'webhook': {
      const filter = (raw.filter ?? {}) as WebhookTrigger['filter'];
      const visits = filterVisitBound(filter);
      if (visits > FILTER_VISIT_LIMIT) {
        throw invalid('filter', `could visit ${visits} payload values, more than the limit of ${FILTER_VISIT_LIMIT}: `
          + `each '*' may expand to ${MAX_WILDCARD_ELEMENTS} array elements, so use fewer wildcards or fewer paths`);
      }
      return {
        type: 'webhook', provider: raw.provider as WebhookTriggerProvider, event: String(raw.event), filter,
        ...(typeof raw.priority === 'number' ? { priority: raw.priority } : {}),
      };
    }
    default:
      return { type: 'manual' };
  }
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const invalid = (field: string, what: string): TroupeError =>
  new TroupeError('VALIDATION_FAILED', `field 'definitionYaml.trigger.${field}' ${what}`, { field: `definitionYaml.trigger.${field}` });
