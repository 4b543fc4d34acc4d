import { expect } from 'chai';
import type { Knex } from 'knex';
import type { TestNode } from '../../support/node.js';
import { auditOutboxDepth, drainAuditOutbox } from '../../../storage/audit-outbox.js';

/**
 * The runtime tables the authoring helpers must never change, read in a fixed order so two readings compare equal
 * exactly when nothing changed. The helpers' own store (proposal rows, the proposal actors' snapshots and their
 * `proposal.version_created` audit entries) is left out: apply is allowed to write there and nowhere else.
 */
const runtimeTables = ['workflows', 'workflow_versions', 'workflow_runs', 'approval_gates', 'sessions', 'policies', 'policy_versions'] as const;

/**
 * Audit entries of earlier requests reach the chain through the outbox moments after their reply (decision 0041):
 * waits until none is left in flight, so a reading never catches an earlier request's entry half-way.
 */
async function auditSettled(db: Knex): Promise<void> {
  for (let round = 0; round < 250; round++) {
    await drainAuditOutbox(db);
    if ((await auditOutboxDepth(db)) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the audit outbox did not drain within 5 s');
}

export async function runtimeState(db: Knex): Promise<string> {
  await auditSettled(db);
  const out: Record<string, unknown> = {};
  for (const table of runtimeTables) out[table] = await db(table).select('*').orderByRaw('1, 2');
  out.actor_snapshots = await db('actor_snapshots').whereNot({ kind: 'proposal' }).select('*').orderBy('address');
  out.audit_log = await db('audit_log').whereNot({ type: 'proposal.version_created' }).select('*').orderBy(['org_id', 'seq']);
  return JSON.stringify(out);
}

export async function expectRuntimeUnchanged(t: TestNode, action: () => Promise<unknown>): Promise<void> {
  const before = await runtimeState(t.node.deps.db);
  await action();
  expect(await runtimeState(t.node.deps.db), 'runtime tables changed').to.equal(before);
}
