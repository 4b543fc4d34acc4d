import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Single sign-on domains are proven by DNS before they route anyone (decision 0091).
 * - `org_sso_domains` becomes one row per (org, domain) claim: several orgs may claim a domain while it is pending, and
 *   the partial unique index lets only one of them hold it verified (`verified_at` set) — whoever proves it first.
 * - `verification_token` is the random value the org publishes as `troupe-verification=<token>` in a TXT record at
 *   `_troupe-verification.<domain>`; one per claim, so one org's record never proves another's claim.
 * - Claims made before this migration were never proven: they become pending, each with a fresh token, and route no
 *   sign-in (nor refuse a password) until their org verifies them.
 */
export const ssoDomainVerificationMigration: Migration = {
  name: '0058_sso_domain_verification',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('org_sso_domains', (t) => {
      t.text('verification_token');
      t.timestamp('claimed_at', { useTz: true });
      t.timestamp('verified_at', { useTz: true });
    });
    const claims = await knex('org_sso_domains').select('domain') as { domain: string }[];
    for (const { domain } of claims) {
      await knex('org_sso_domains').where({ domain }).update({ verification_token: newVerificationToken(), claimed_at: knex.fn.now() });
    }
    await knex.schema.alterTable('org_sso_domains', (t) => {
      t.dropPrimary();
      t.dropNullable('verification_token');
      t.dropNullable('claimed_at');
      t.primary(['org_id', 'domain']);
    });
    await knex.raw('create unique index org_sso_domains_verified on org_sso_domains (domain) where verified_at is not null');
  },

  async down(knex: Knex): Promise<void> {
    await knex.raw('drop index if exists org_sso_domains_verified');
    // Back to one org per domain: only the verified claim of a domain, or its oldest pending one, survives.
    await knex.raw(`delete from org_sso_domains d where exists (
      select 1 from org_sso_domains o where o.domain = d.domain and o.org_id <> d.org_id
        and (o.verified_at is not null and d.verified_at is null
          or (o.verified_at is null) = (d.verified_at is null) and (o.claimed_at, o.org_id) < (d.claimed_at, d.org_id)))`);
    await knex.schema.alterTable('org_sso_domains', (t) => {
      t.dropPrimary();
      t.dropColumn('verification_token');
      t.dropColumn('claimed_at');
      t.dropColumn('verified_at');
      t.primary(['domain']);
    });
  },
};

/** 128 random bits, base64url: what an org publishes to prove it holds the domain. */
const newVerificationToken = (): string => randomBytes(16).toString('base64url');
