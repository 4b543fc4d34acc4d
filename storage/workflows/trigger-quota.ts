import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';

/** What a published trigger counts against: its kind's limit per org, and the variable an operator sets it with. */
export interface TriggerQuota {
  readonly kind: 'schedule' | 'webhook';
  readonly max: number;
  readonly what: string;
  readonly variable: string;
}

/**
 * Refuses to deploy one more published trigger of a kind in an org that already has `max` (409 CONFLICT naming the
 * limit; issue 30). Counted under a per-org advisory lock in the version's transaction, so concurrent publishes from
 * one org cannot overshoot; the workflow's own deployment is not counted, so republishing always works.
 */
export async function assertTriggerQuota(trx: Knex, orgId: string, workflowId: string, quota: TriggerQuota): Promise<void> {
  await trx.raw("select pg_advisory_xact_lock(hashtext('troupe.workflow_triggers'), hashtext(?))", [orgId]);
  const counted = await trx('workflow_triggers')
    .where({ org_id: orgId, kind: quota.kind }).whereNotNull('published_version').whereNot({ workflow_id: workflowId })
    .count({ n: '*' }).first();
  if (Number((counted as { n?: unknown } | undefined)?.n ?? 0) >= quota.max) {
    throw new TroupeError('CONFLICT', `this org already has ${quota.max} published ${quota.what}, its limit (${quota.variable})`, { limit: quota.max });
  }
}
