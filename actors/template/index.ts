export { createTemplateBehavior, templateAddress, TEMPLATE_KIND } from './actor.js';
export {
  decideTemplate, initialTemplateState, templateTransitions, templateStatuses, templateMsgTypes,
  type TemplateState, type TemplateMsg, type TemplateView, type TemplateEffect, type TemplateContent,
} from './machine.js';
