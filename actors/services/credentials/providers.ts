import { TroupeError } from '../../../ops/kernel/errors.js';
import type { Secrets } from '../../../ops/kernel/secrets.js';
import type { StoredCredential } from '../../../storage/credentials/credentials.js';

/**
 * The credential provider registry (spec 4.2): a stored credential names the provider that produces its current
 * value, and rotation re-resolves it through that provider. `static` keeps the value itself, sealed at rest; a
 * provider that fetches from a vault or mints short-lived tokens is one more entry here with its own `accept`
 * (what PUT stores) and `resolve` (what rotation pushes).
 */
export interface CredentialProvider {
  readonly id: string;
  /** Turns the PUT body into what is stored; throws VALIDATION_FAILED for a body this provider cannot use. */
  accept(input: { orgId: string; kind: string; value: unknown }, secrets: Secrets): { sealedValue: string | null };
  /** The credential's current value. */
  resolve(stored: StoredCredential, secrets: Secrets): Promise<string>;
}

/** Associated data every sealed credential is bound to: a sealed value moved to another org or kind does not open. */
export const credentialSealContext = (orgId: string, kind: string): string => `${orgId}:${kind}`;

/** A credential value is an opaque secret of bounded size (tokens, keys, small JSON documents). */
export const MAX_CREDENTIAL_BYTES = 16 * 1024;

const staticProvider: CredentialProvider = {
  id: 'static',
  accept({ orgId, kind, value }, secrets) {
    if (typeof value !== 'string' || value.length === 0 || Buffer.byteLength(value) > MAX_CREDENTIAL_BYTES) {
      throw new TroupeError('VALIDATION_FAILED', `value must be a non-empty string of at most ${MAX_CREDENTIAL_BYTES} bytes`, { field: 'value' });
    }
    return { sealedValue: secrets.seal(value, credentialSealContext(orgId, kind)) };
  },
  async resolve(stored, secrets) {
    if (stored.sealedValue === null) throw new TroupeError('CONFLICT', 'the stored credential has no value');
    try {
      return secrets.open(stored.sealedValue, credentialSealContext(stored.orgId, stored.kind));
    } catch {
      // A value that no longer opens (tampered row, changed master key) is a state the operator must fix by
      // storing the credential again; it is not the caller's fault and not a crash.
      throw new TroupeError('CONFLICT', 'the stored credential cannot be opened; store it again');
    }
  },
};

export class CredentialProviderRegistry {
  private readonly providers = new Map<string, CredentialProvider>();

  constructor(providers: readonly CredentialProvider[]) {
    for (const p of providers) this.providers.set(p.id, p);
  }

  get ids(): string[] {
    return [...this.providers.keys()];
  }

  get(id: string): CredentialProvider {
    const p = this.providers.get(id);
    if (!p) throw new TroupeError('CONFLICT', `credential provider "${id}" is not available on this node`);
    return p;
  }
}

export const defaultCredentialProviders = (): CredentialProviderRegistry => new CredentialProviderRegistry([staticProvider]);
