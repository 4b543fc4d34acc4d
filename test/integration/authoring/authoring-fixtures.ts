import { expect } from 'chai';
import type { Knex } from 'knex';
import type { TestNode } from '../../support/node.js';

/**
 * The runtime tables the authoring helpers must never change, read in a fixed order so two readings compare equal
 * exactly when nothing changed. The helpers' own store (proposal rows, the proposal actors' snapshots and their
 * `proposal.version_created` audit entries) is left out: apply is allowed to write there and nowhere else.
 */
const runtimeTables = ['workflows', 'workflow_versions', 'workflow_runs', 'approval_gates', 'sessions', 'policies', 'policy_versions'] as const;

export async function runtimeState(db: Knex): Promise<string> {
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
