/**
 * One org's connection to a webhook provider. The secret stays sealed here; only the webhook path opens it. Its own
 * file: ./provider-integrations.ts and ./provider-accounts.ts both speak of it, and each calls the other.
 */
export interface ProviderIntegration {
  readonly orgId: string;
  readonly provider: string;
  readonly sealedSecret: string;
  readonly projectId: string | null;
}
