export { createActorSystem, type ActorRef, type ActorSystem, type ActorSystemOptions } from './system.js';
export {
  accept, reject,
  type ActorBehavior, type Decision, type DecideContext, type EffectContext, type Machine, type MessageSchema, type Rejection,
  type TransitionTable,
} from './machine.js';
export { choose, defineMachine, go, type StateIn, type Step, type Take, type Transition } from './define-machine.js';
export { compileAdmission, type Admission } from './admission.js';
export {
  decideSupervision, defaultSupervision, noCrashes,
  type CrashHistory, type SupervisionDirective, type SupervisionPolicy,
} from './supervision.js';
