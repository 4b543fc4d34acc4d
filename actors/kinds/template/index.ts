export { createTemplateBehavior, templateAddress, TEMPLATE_KIND } from './actor.js';
export {
  templateMachine, initialTemplateState, templateStatuses, templateMsgTypes,
  type TemplateState, type TemplateMsg, type TemplateView, type TemplateEffect, type TemplateContent,
} from './machine.js';
