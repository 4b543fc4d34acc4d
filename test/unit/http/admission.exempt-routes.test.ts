// Invariant: the writes a worker's liveness rests on are never shed by the admission gate: the daemon heartbeat (a
// refusal would make a live worker look dead) and the step heartbeat (documented as never answering 5xx). Every
// other write counts against the budget.
import { expect } from 'chai';
import { allRoutes } from '../../../http/routes.js';

describe('admission: which writes are exempt', () => {
  it('exempts exactly the daemon heartbeat (and its deprecated /v1 alias) and the step heartbeat', () => {
    const exempt = allRoutes().filter((r) => r.admission === 'exempt').map((r) => `${r.method.toUpperCase()} ${r.path}`).sort();
    expect(exempt).to.deep.equal(['POST /api/daemon/heartbeat', 'POST /api/sessions/:id/step-heartbeat', 'POST /v1/daemon/heartbeat']);
  });
});
