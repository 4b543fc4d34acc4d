/**
 * Migration 0058 makes every single sign-on domain claim made before it pending (decision 0091): none was ever proven,
 * so none may keep routing sign-ins or refusing passwords; each gets a token of its own to prove it with. Afterwards a
 * pending domain may be claimed by several orgs while only one holds it verified.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { ssoDomainVerificationMigration } from '../../../storage/migrations/0058_sso_domain_verification.js';
import { dbEngines, type TestDb } from '../../support/db.js';

describe('migration 0058: single sign-on domain verification', function () {
  for (const engine of dbEngines) {
    (engine.skip ? describe.skip : describe)(engine.name, function () {
      let db: TestDb;
      before(async function () {
        this.timeout(60_000);
        db = await engine.open('sso-domains');
      });
      after(async () => {
        await db?.drop();
      });

      const org = async (name: string) => {
        const id = randomUUID();
        await db.knex('orgs').insert({ id, name, slug: `${name.toLowerCase()}-${id}` });
        await db.knex('org_sso').insert({
          org_id: id, issuer: 'https://login.example', client_id: 'c', sealed_client_secret: 's', groups_claim: 'groups', role_map: '{}',
          default_role: 'member', enforce: true, updated_by: 'u', created_at: new Date(), updated_at: new Date(),
        });
        return id;
      };

      it('makes every existing claim pending with a token of its own; then only one org holds a domain verified', async () => {
        await ssoDomainVerificationMigration.down(db.knex);
        const [acme, globex] = [await org('Acme'), await org('Globex')];
        await db.knex('org_sso_domains').insert([{ domain: 'acme.example', org_id: acme }, { domain: 'acme.dev', org_id: acme }]);
        await ssoDomainVerificationMigration.up(db.knex);

        const claims = await db.knex('org_sso_domains').where({ org_id: acme }).orderBy('domain');
        expect(claims.map((c) => [c.domain, c.verified_at])).to.deep.equal([['acme.dev', null], ['acme.example', null]]);
        expect(claims[0].verification_token).to.match(/^[A-Za-z0-9_-]{22}$/);
        expect(claims[0].verification_token).to.not.equal(claims[1].verification_token);

        await db.knex('org_sso_domains').insert({ domain: 'acme.example', org_id: globex, verification_token: 't', claimed_at: new Date() });
        await db.knex('org_sso_domains').where({ org_id: globex }).update({ verified_at: new Date() });
        let second: unknown;
        await db.knex('org_sso_domains').where({ org_id: acme, domain: 'acme.example' }).update({ verified_at: new Date() }).catch((err: unknown) => { second = err; });
        expect(second, 'a second verified holder').to.have.property('code', '23505');
      });
    });
  }
});
