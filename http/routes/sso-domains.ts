import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { txtName, txtRecords, txtValue } from '../../actors/services/sso/domain-txt.js';
import { readOrgSso } from '../../storage/identity/sso.js';
import { markDomainVerified, readDomainClaim, verifiedElsewhere } from '../../storage/identity/sso-domains.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import type { HttpRequest, Reply, Route } from '../types.js';
import { DOMAIN, domainView, onOwnOrg } from './sso-common.js';
import { ssoDomainReply } from './sso-schemas.js';

/**
 * Proving a single sign-on domain (decision 0091): `POST /api/org/{orgId}/sso/domains/{domain}/verify` looks up the
 * TXT records at `_troupe-verification.<domain>` and marks the org's claim verified when one equals its
 * `troupe-verification=<token>`. Only a verified domain sends its people's sign-ins to the org's provider and takes
 * `enforce`; the first org to verify a domain holds it. Owners only, as every change of who enters the org.
 */
const MAX_SHOWN_RECORDS = 10;
const MAX_SHOWN_CHARS = 200;

function shown(records: readonly string[]): string {
  const listed = records.slice(0, MAX_SHOWN_RECORDS).map((r) => JSON.stringify(r.length > MAX_SHOWN_CHARS ? `${r.slice(0, MAX_SHOWN_CHARS)}…` : r));
  return records.length > MAX_SHOWN_RECORDS ? `${listed.join(', ')} and ${records.length - MAX_SHOWN_RECORDS} more` : listed.join(', ');
}

async function verify(req: HttpRequest, deps: Deps): Promise<Reply> {
  const p = orgPrincipal(req);
  const domain = (req.params.domain ?? '').toLowerCase();
  if (!DOMAIN.test(domain)) throw new TroupeError('VALIDATION_FAILED', 'domain: not a domain of two or more labels', { field: 'domain' });
  const claim = await readDomainClaim(deps.db, p.orgId, domain);
  if (!claim) throw new TroupeError('NOT_FOUND', `this org's single sign-on does not claim ${domain}`);
  if (!claim.verified) {
    if (claim.takenBy !== undefined) throw verifiedElsewhere(domain);
    const name = txtName(domain);
    const expected = txtValue(claim.verificationToken);
    const records = await txtRecords(name, deps.config.ssoDnsServers);
    if (!records.includes(expected)) {
      const found = records.length === 0 ? `no TXT record at ${name}` : `the TXT records at ${name} are ${shown(records)}`;
      throw new TroupeError('CONFLICT', `${domain} is not verified: ${found}; add a TXT record at ${name} with the value ${expected} and verify again`, {
        domain, txtName: name, expected, found: records.slice(0, MAX_SHOWN_RECORDS),
      });
    }
    const at = new Date(deps.clock.now());
    const verified = await deps.db.transaction(async (trx) => {
      if (!(await markDomainVerified(trx, p.orgId, domain, claim.verificationToken, at))) return false;
      await deps.services.audit.record({
        orgId: p.orgId, type: 'sso.domain_verified', actor: requesterOf(p), subject: p.orgId, at, payload: { domain, txtName: name },
      }, trx);
      return true;
    });
    // A second verify of the same claim (a double click) that lost the race finds it verified: answered as done.
    if (!verified && !(await readDomainClaim(deps.db, p.orgId, domain))?.verified) {
      throw new TroupeError('CONFLICT', `the claim of ${domain} changed while it was being verified; verify again`, { domain });
    }
  }
  const sso = await readOrgSso(deps.db, p.orgId);
  const now = sso?.domains.find((d) => d.domain === domain);
  if (!now) throw new TroupeError('NOT_FOUND', `this org's single sign-on does not claim ${domain}`);
  return { body: domainView(now) };
}

export function ssoDomainRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/org/:orgId/sso/domains/:domain/verify', auth: 'org', tags: ['identity', 'sso'],
      summary: "Verify a claimed single sign-on domain by its DNS TXT record: when a TXT record at txtName equals txtValue the domain is verified and its sign-ins go to this org's provider (owners only; 409 naming the records found otherwise, or when another org verified it first; 503 DNS_LOOKUP_FAILED when the lookup failed)",
      description: 'A claimed domain is `pending` until verified and routes no sign-in, nor takes `enforce`. Another org\'s pending claim of the same '
        + 'domain is no bar: the first org to verify holds it, and the other\'s claim shows `taken`. Audited as `sso.domain_verified`.',
      responseSchema: ssoDomainReply,
      authorize: onOwnOrg(true),
      handler: verify,
    }),
  ];
}
