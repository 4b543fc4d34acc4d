export { createExternalAgentBehavior, EXTERNAL_AGENT_KIND, externalAgentAddress, externalAgentId } from './actor.js';
export {
  externalAgentMachine, initialExternalAgentState, placeholderCard, trustLevels, externalAgentMsgTypes,
  type TrustLevel, type ExternalAgentRecord, type ExternalAgentState, type ExternalAgentMsg, type ExternalAgentReply,
} from './machine.js';
export { fetchAgentCard, parseAgentCard, cardUrls, isPolicyRefusal, CARD_PATHS, type ExternalAgentCard, type CardFetch } from './agent-card-fetch.js';
