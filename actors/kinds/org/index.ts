export { createOrgBehavior, ORG_KIND, type OrgBehaviorPorts } from './actor.js';
export {
  orgMachine, initialOrgState, credentialStatuses, orgMsgTypes, MAX_CREDENTIALS_PER_KIND, type CredentialStatus,
  type OrgState, type OrgMsg, type OrgReply, type OrgEffect, type ApiKeyMeta, type RegistrationTokenMeta,
  type ApiKeyIssued, type RegistrationTokenIssued, type CredentialRevoked,
} from './machine.js';

/** The address of one org's actor. */
export const orgAddress = (orgId: string): string => `org/${orgId}`;
