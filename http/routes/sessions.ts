import type { Deps } from '../../actors/services/deps.js';
import type { Route } from '../types.js';
import { dispatchRoute } from './session-dispatch.js';
import { workerStatusRoute } from './session-status.js';
import { publicSessionRoutes } from './public-sessions.js';

/**
 * Sessions: dispatch (session-dispatch.ts), the worker's status transitions (session-status.ts), and the public
 * surface: stop, prompt, detail, list and error-tracker issues (public-sessions.ts); their shapes in session-schemas.ts.
 */
export function sessionRoutes(): Route<Deps>[] {
  return [dispatchRoute(), workerStatusRoute(), ...publicSessionRoutes()];
}
