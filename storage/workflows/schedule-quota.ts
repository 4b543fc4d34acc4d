import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';

/**
 * Refuses to deploy one more published schedule in an org that already has `max` (409 CONFLICT naming the limit;
 * issue 30). Counted under a per-org advisory lock in the version's transaction, so concurrent publishes from one org
 * cannot overshoot; the workflow's own deployment is not counted, so republishing a scheduled workflow always works.
 */
export async function assertScheduleQuota(trx: Knex, orgId: string, workflowId: string, max: number): Promise<void> {
  await trx.raw("select pg_advisory_xact_lock(hashtext('troupe.workflow_schedules'), hashtext(?))", [orgId]);
  const counted = await trx('workflow_triggers')
    .where({ org_id: orgId, kind: 'schedule' }).whereNotNull('published_version').whereNot({ workflow_id: workflowId })
    .count({ n: '*' }).first();
  if (Number((counted as { n?: unknown } | undefined)?.n ?? 0) >= max) {
    throw new TroupeError('CONFLICT', `this org already has ${max} published schedules, its limit (TROUPE_SCHEDULES_PER_ORG)`, { limit: max });
  }
}
