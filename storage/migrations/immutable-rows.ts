import type { Knex } from 'knex';

/**
 * Makes a table append-only in the database itself, so no code path (and no operator's stray UPDATE) can rewrite
 * history: UPDATE, DELETE and TRUNCATE all raise P0001 naming the table. Every immutable table (audit log, workflow,
 * policy, proposal and template versions) goes through this one definition.
 *
 * `allowCascades` lets rows go when a change inside another trigger removes them (a foreign key's ON DELETE
 * CASCADE runs at trigger depth > 0), for version tables that must disappear with their owner; direct statements
 * are still refused.
 */
export async function makeRowsImmutable(knex: Knex, table: string, options: { allowCascades?: boolean } = {}): Promise<void> {
  const fn = rejectFunctionOf(table);
  await knex.raw(`
    create function ${fn}() returns trigger language plpgsql as $$
    begin
      raise exception '${table} rows are immutable (% rejected)', tg_op using errcode = 'P0001';
    end
    $$`);
  await knex.raw(`
    create trigger ${table}_immutable_rows before update or delete on ${table}
      for each row ${options.allowCascades ? 'when (pg_trigger_depth() = 0) ' : ''}execute function ${fn}()`);
  await knex.raw(`
    create trigger ${table}_no_truncate before truncate on ${table}
      for each statement execute function ${fn}()`);
}

/** For `down`: the table's own drop removes the triggers; the function is dropped here. */
export async function dropImmutableRowsFunction(knex: Knex, table: string): Promise<void> {
  await knex.raw(`drop function if exists ${rejectFunctionOf(table)}()`);
}

const rejectFunctionOf = (table: string): string => `${table}_reject_change`;
