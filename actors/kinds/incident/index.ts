export { createIncidentBehavior, INCIDENT_KIND, incidentAddress, incidentIdFor } from './actor.js';
export {
  incidentMachine, initialIncidentState, incidentLifecycle, lifecycleOf, isClosedStatus,
  type IncidentState, type IncidentMsg, type IncidentReply, type IncidentEffect, type IncidentRecord, type IncidentFields,
} from './machine.js';
