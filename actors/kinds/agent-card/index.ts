export { createAgentCardBehavior, AGENT_CARD_KIND, agentCardAddress } from './actor.js';
export {
  agentCardMachine, initialAgentCardState, agentCardLifecycle, agentCardMsgTypes, lifecycleOf,
  type AgentCardState, type AgentCardMsg, type AgentCardReply, type AgentCardEffect, type AgentCardRecord, type InstallRecord,
} from './machine.js';
