import { positiveInteger, record } from './payload-fields.js';
import type { WebhookProvider } from './providers.js';

/**
 * The provider's own account a delivery comes from, read before its signature is checked (decision 0070), most
 * specific first. Nothing here is trusted: the ids only choose which orgs' secrets are tried, and a delivery is
 * accepted only if one of them signed it. Field names are the providers' published payloads:
 * - GitHub: the `X-GitHub-Hook-Installation-Target-ID` header (the repository, organisation or app the hook was
 *   created on), then the payload's `repository.owner` id and login.
 * - Linear: the payload's `organizationId` (the workspace).
 * - CircleCI: the payload's `organization.id`.
 * - Vercel: the payload's `payload.team.id`, or `payload.user.id` for a personal account (its team id is null).
 */

type Headers = Readonly<Record<string, string | undefined>>;

/** Account ids go into a lookup and logs: printable ASCII, bounded, as registration accepts them. */
const accountId = (v: unknown): string | undefined => {
  const id = typeof v === 'number' ? (positiveInteger(v) === undefined ? undefined : String(v)) : v;
  return typeof id === 'string' && id.length > 0 && id.length <= 200 && /^[\x21-\x7e]+$/.test(id) ? id : undefined;
};

const present = (...ids: (string | undefined)[]): string[] => ids.filter((id): id is string => id !== undefined);

/**
 * The candidate account ids of a delivery, in one list so that one query finds every org claiming any of them.
 * `body` is the unverified bytes parsed (once; the same parse serves the delivery once verified), or undefined when
 * they are not a JSON object.
 */
export function accountIdsOf(provider: WebhookProvider, headers: Headers, body: () => Record<string, unknown> | undefined): string[] {
  switch (provider) {
    case 'github': {
      const target = accountId(headers['x-github-hook-installation-target-id']);
      const owner = record(record(body()?.repository).owner);
      return present(target, accountId(owner.id), accountId(owner.login));
    }
    case 'linear': return present(accountId(body()?.organizationId));
    case 'circleci': return present(accountId(record(body()?.organization).id));
    case 'vercel': {
      const payload = record(body()?.payload);
      return present(accountId(record(payload.team).id) ?? accountId(record(payload.user).id));
    }
  }
}
