import { Resolver } from 'node:dns/promises';
import { TroupeError } from '../../../ops/kernel/errors.js';

/**
 * The DNS side of proving a single sign-on domain (decision 0091): the org publishes
 * `troupe-verification=<token>` in a TXT record at `_troupe-verification.<domain>`, as domain checks at Slack, Okta
 * and GitHub work. The node asks the resolvers `TROUPE_SSO_DNS_SERVERS` names, or the system's.
 */
export const TXT_PREFIX = '_troupe-verification';

export const txtName = (domain: string): string => `${TXT_PREFIX}.${domain}`;
export const txtValue = (token: string): string => `troupe-verification=${token}`;

/** A claim the resolver could not answer for is retried by the owner; this long a wait is the worst case of one try. */
const LOOKUP_TIMEOUT_MS = 2_500;
const LOOKUP_TRIES = 2;

/** Names that do not exist, or exist without TXT records: an answer, not a failure. */
const NO_RECORDS = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * The TXT records at `name`, each record's strings joined as RFC 7208 §3.3 joins them; none for a name without any.
 * A resolver that fails or does not answer is a 503 DNS_LOOKUP_FAILED, so an owner is never told their record is
 * missing when the lookup itself went wrong.
 */
export async function txtRecords(name: string, servers: readonly string[] | undefined): Promise<string[]> {
  const resolver = new Resolver({ timeout: LOOKUP_TIMEOUT_MS, tries: LOOKUP_TRIES });
  if (servers !== undefined) resolver.setServers([...servers]);
  try {
    return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && NO_RECORDS.has(code)) return [];
    throw new TroupeError('DNS_LOOKUP_FAILED', `the DNS lookup of TXT ${name} failed (${typeof code === 'string' ? code : 'no answer'}); nothing changed, verify again shortly`, {
      txtName: name, reason: typeof code === 'string' ? code : 'unknown', retryAfterSeconds: 5,
    });
  }
}
