export { createActorSystem, type ActorRef, type ActorSystem, type ActorSystemOptions } from './system.js';
export { accept, reject, allows, type ActorBehavior, type Decision, type DecideContext, type EffectContext, type MessageSchema, type TransitionTable } from './machine.js';
export { compileAdmission, type Admission } from './admission.js';
export {
  decideSupervision, defaultSupervision, noCrashes,
  type CrashHistory, type SupervisionDirective, type SupervisionPolicy,
} from './supervision.js';
