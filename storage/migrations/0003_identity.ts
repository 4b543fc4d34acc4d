import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Identity and tenancy tables. Orgs, users, memberships, projects and teams are written by the identity routes;
 * `api_keys` and `registration_tokens` are read models projected by the org actor (it owns issue and revoke).
 * Every table but `users` carries `org_id`, so every query can be scoped by org and an index serves it.
 * Secrets are never stored: keys and tokens keep a SHA-256 hex digest plus an 8-character lookup prefix.
 */
export const identityMigration: Migration = {
  name: '0003_identity',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('orgs', (t) => {
      t.uuid('id').primary();
      t.text('name').notNullable();
      t.text('slug').notNullable().unique();
      t.text('plan').notNullable().defaultTo('free');
      t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    });

    await knex.schema.createTable('users', (t) => {
      t.uuid('id').primary();
      // Stored lower-cased: one address, one user, whatever case it is typed in.
      t.text('email').notNullable().unique();
      t.text('first_name');
      t.text('last_name');
      t.text('profile_picture_url');
      t.text('password_hash');
      t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    });

    await knex.schema.createTable('org_memberships', (t) => {
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
      t.text('role').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      t.primary(['org_id', 'user_id']);
      t.index(['user_id']);
    });
    await knex.raw(`alter table org_memberships add constraint org_memberships_role_check check (role in ('owner','admin','member','viewer'))`);

    await knex.schema.createTable('projects', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('name').notNullable();
      t.text('slug').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      t.unique(['org_id', 'slug']);
    });

    await knex.schema.createTable('project_memberships', (t) => {
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
      t.text('role').notNullable();
      t.primary(['project_id', 'user_id']);
      t.index(['org_id', 'user_id']);
    });
    await knex.raw(`alter table project_memberships add constraint project_memberships_role_check check (role in ('admin','editor','viewer'))`);

    await knex.schema.createTable('api_keys', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('name').notNullable();
      t.text('prefix').notNullable();
      t.text('hash').notNullable();
      t.jsonb('scopes').notNullable().defaultTo('[]');
      t.text('requester_id');
      // The human on whose behalf the key acts (whoami's `user`); null when minted by a machine credential.
      t.uuid('created_by').references('users.id').onDelete('SET NULL');
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('revoked_at', { useTz: true });
      t.index(['prefix']);
      t.index(['org_id']);
    });

    await knex.schema.createTable('registration_tokens', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('name').notNullable();
      t.text('prefix').notNullable();
      t.text('hash').notNullable();
      t.jsonb('projects').notNullable().defaultTo('[]');
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('revoked_at', { useTz: true });
      t.index(['prefix']);
      t.index(['org_id']);
    });

    await knex.schema.createTable('teams', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('name').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      t.index(['org_id']);
    });

    await knex.schema.createTable('team_members', (t) => {
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
      t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
      t.text('role').notNullable().defaultTo('member');
      t.timestamp('added_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      t.primary(['team_id', 'user_id']);
    });
    await knex.raw(`alter table team_members add constraint team_members_role_check check (role in ('maintainer','member'))`);
  },

  async down(knex: Knex): Promise<void> {
    for (const table of ['team_members', 'teams', 'registration_tokens', 'api_keys', 'project_memberships', 'projects', 'org_memberships', 'users', 'orgs']) {
      await knex.schema.dropTableIfExists(table);
    }
  },
};
