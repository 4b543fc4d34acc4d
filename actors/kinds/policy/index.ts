export { createPolicyBehavior, POLICY_KIND, policyAddress } from './actor.js';
export {
  policyMachine, initialPolicyState, policyLifecycle, policyMsgTypes, lifecycleOf,
  type PolicyState, type PolicyMsg, type PolicyReply, type PolicyEffect, type PolicyRecord, type PolicyVersionRecord,
} from './machine.js';
export { assertValidCedar, cedarProblem, enforcementText, statementId, type CedarProblem } from './cedar-text.js';
export { StoredPolicySource, announcePolicyChange, POLICY_CHANGED_TOPIC } from './enforcement.js';
