import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * One row per actor address: the durable state an actor rehydrates from, fenced by `version` (see
 * storage/knex-snapshot-store.ts). `kind` (the address up to its first '/') lets operators and sweeps find every
 * actor of a kind without parsing addresses.
 */
export const actorSnapshots: Migration = {
  name: '0001_actor_snapshots',
  async up(knex: Knex) {
    await knex.raw(`
      create table actor_snapshots (
        address    text primary key,
        kind       text not null,
        version    bigint not null check (version > 0),
        state      jsonb not null,
        updated_at timestamptz not null default now()
      )`);
    await knex.raw('create index actor_snapshots_kind_idx on actor_snapshots (kind)');
  },
  async down(knex: Knex) {
    await knex.raw('drop table if exists actor_snapshots');
  },
};
