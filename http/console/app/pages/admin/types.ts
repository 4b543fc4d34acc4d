import type { operations } from '../../../../client/api-types.generated.js';

/**
 * The administration pages' replies and bodies, as the generated client types them from the routes' schemas (the
 * same way as ../../api-types.ts, kept apart so these pages own their types).
 */
type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;

export type MemberList = JsonOf<operations['getApiOrgOrgIdMembers']['responses'][200]>;
export type Member = MemberList['members'][number];
export type NewMember = JsonOf<operations['postApiOrgOrgIdMembers']['requestBody']>;
export type MemberChange = JsonOf<operations['patchApiOrgOrgIdMembersUserId']['requestBody']>;
export type MemberReply = JsonOf<operations['postApiOrgOrgIdMembers']['responses'][201]>;

export type TeamList = JsonOf<operations['getApiOrgTeams']['responses'][200]>;
export type Team = TeamList['teams'][number];
export type NewTeam = JsonOf<operations['postApiOrgTeams']['requestBody']>;
export type TeamMembers = JsonOf<operations['getApiOrgTeamsIdMembers']['responses'][200]>;
export type NewTeamMember = JsonOf<operations['postApiOrgTeamsIdMembers']['requestBody']>;

export type ApiKeyList = JsonOf<operations['getApiOrgOrgIdKeys']['responses'][200]>;
export type ApiKey = ApiKeyList['keys'][number];
export type NewApiKey = JsonOf<operations['postApiOrgOrgIdKeys']['requestBody']>;
export type IssuedApiKey = JsonOf<operations['postApiOrgOrgIdKeys']['responses'][201]>;

export type RegistrationTokenList = JsonOf<operations['getApiOrgOrgIdRegistrationTokens']['responses'][200]>;
export type RegistrationToken = RegistrationTokenList['registrationTokens'][number];
export type NewRegistrationToken = JsonOf<operations['postApiOrgOrgIdRegistrationTokens']['requestBody']>;
export type IssuedRegistrationToken = JsonOf<operations['postApiOrgOrgIdRegistrationTokens']['responses'][201]>;

export type Integrations = JsonOf<operations['getApiOrgOrgIdIntegrations']['responses'][200]>;
export type OAuthIntegration = Integrations['oauth'][number];
export type WebhookIntegration = Integrations['webhooks'][number];
export type OAuthStart = JsonOf<operations['postApiIntegrationsProviderOauthAuthorize']['responses'][200]>;
export type WebhookSecret = JsonOf<operations['putApiOrgOrgIdIntegrationsProvider']['requestBody']>;

export type ProjectBudget = JsonOf<operations['getApiProjectsProjectIdBudget']['responses'][200]>;
export type BudgetChange = JsonOf<operations['putApiProjectsProjectIdBudget']['requestBody']>;

export type SsoSettings = JsonOf<operations['getApiOrgOrgIdSso']['responses'][200]>;
export type SsoDomain = JsonOf<operations['postApiOrgOrgIdSsoDomainsDomainVerify']['responses'][200]>;
