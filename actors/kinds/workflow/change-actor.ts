import type { Principal } from '../../services/identity/principal.js';
import type { ChangeActor } from './machine.js';

/**
 * The identity a change is recorded under (snapshot `changedBy`, audit `actor`): the kind of credential and its
 * id, never anything the request body claims.
 */
export function changeActorOf(principal: Principal): ChangeActor {
  switch (principal.kind) {
    case 'user': return { id: principal.userId, label: `user:${principal.userId}` };
    case 'apiKey': return { id: principal.keyId, label: `apiKey:${principal.keyId}` };
    case 'machine': return { id: principal.clientId, label: `machine:${principal.clientId}` };
    case 'runtime': return { id: principal.workerId, label: `worker:${principal.workerId}` };
    case 'admin': return { id: 'platform-admin', label: 'admin' };
  }
}
