import type { Deps } from '../../deps.js';
import { findProviderIntegration, type ProviderIntegration } from '../../../../storage/integrations/provider-integrations.js';
import { integrationsClaiming } from '../../../../storage/integrations/provider-accounts.js';
import { ProviderWebhookRefusal, signedWith, type WebhookProvider } from './providers.js';

/**
 * Which org a provider delivery belongs to (decisions 0025, 0070): the org whose secret made its signature, chosen
 * among the orgs the delivery may belong to — the one its URL names (`?org=`), or else the few that registered the
 * provider account it comes from — and never among all orgs. Each candidate costs one secret open and one HMAC.
 */

type SigningDeps = Pick<Deps, 'db' | 'secrets' | 'log'>;

export const webhookSealContext = (orgId: string, provider: WebhookProvider): string => `${orgId}:webhook:${provider}`;

/** The named org's connection when its secret made one of `signatures`; throws ProviderWebhookRefusal otherwise. */
export async function namedSigner(
  deps: SigningDeps, provider: WebhookProvider, orgId: string, signatures: readonly Buffer[], body: Buffer,
): Promise<ProviderIntegration> {
  const integration = await findProviderIntegration(deps.db, orgId, provider);
  if (!integration) throw new ProviderWebhookRefusal('not-connected');
  if (!signedBy(deps, integration, signatures, body)) throw new ProviderWebhookRefusal('no-matching-secret');
  return integration;
}

/**
 * The connection, among those that registered one of `accountIds`, whose secret made one of `signatures`, tried
 * in the order storage gives (most specific id first, earliest claim first). No org claiming them is a refusal
 * before any secret is opened.
 */
export async function claimingSigner(
  deps: SigningDeps, provider: WebhookProvider, accountIds: readonly string[], signatures: readonly Buffer[], body: Buffer,
): Promise<ProviderIntegration> {
  const claimants = await integrationsClaiming(deps.db, provider, accountIds);
  if (claimants.length === 0) throw new ProviderWebhookRefusal('unknown-account');
  const signer = claimants.find((integration) => signedBy(deps, integration, signatures, body));
  if (signer === undefined) throw new ProviderWebhookRefusal('no-matching-secret');
  return signer;
}

function signedBy(deps: SigningDeps, integration: ProviderIntegration, signatures: readonly Buffer[], body: Buffer): boolean {
  const provider = integration.provider as WebhookProvider;
  let secret: string;
  try {
    secret = deps.secrets.open(integration.sealedSecret, webhookSealContext(integration.orgId, provider));
  } catch {
    deps.log.error({ orgId: integration.orgId, provider }, 'a webhook secret could not be opened (master key changed?)');
    return false;
  }
  return signedWith(provider, secret, signatures, body);
}
