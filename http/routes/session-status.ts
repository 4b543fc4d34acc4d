import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { publicIdPattern, sessionAddress, type SessionReply } from '../../actors/kinds/session/index.js';
import { daemonServices } from '../../actors/services/daemon/services.js';
import { findSession } from '../../storage/sessions/queries.js';
import type { Route } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal } from '../principal.js';
import { owePullRequestForRun } from '../../actors/services/integrations/pull-requests/owe.js';
import { recordRunReport } from '../../storage/sessions/run-reports.js';
import { statusBody, transitionReply, withoutKind } from './session-schemas.js';
import { stopRunOverBudget } from '../../actors/services/budgets/budgets.js';
import { isTerminal } from '../../actors/kinds/session/machine.js';

/** `POST /api/sessions/:id/status`: a worker moves a session it holds through the status machine, with what it knows of the run. */
export function workerStatusRoute(): Route<Deps> {
  return route({
    method: 'post',
    path: '/api/sessions/:id/status',
    auth: 'runtime',
    summary: 'A worker moves a session through its status machine (409 on an illegal move)',
    description: 'The report may carry what the worker knows of the run: `agent`, `usage`, `workspace` (issue 34). '
      + 'They are kept, the latest of each per run, once the move is accepted, and shown in `GET /api/public/sessions/{id}`; '
      + 'a refused move keeps nothing. A run that ends `completed` with a pushed workspace of new commits opens a pull '
      + "request when its repository is on GitHub and the org has a GitHub connection.",
    tags: ['sessions', 'daemon'],
    bodySchema: statusBody,
    responseSchema: transitionReply,
    async handler(req, deps) {
      const p = orgPrincipal(req);
      if (p.kind !== 'runtime') throw new TroupeError('AUTH_FORBIDDEN');
      const body = req.body;
      if (body.workerId !== p.workerId) throw new TroupeError('AUTH_FORBIDDEN', 'workerId does not match the runtime token');
      const id = req.params.id;
      if (id === undefined || !publicIdPattern.test(id)) throw new TroupeError('NOT_FOUND', 'session not found');
      // The name is found in the worker's org (one indexed read); the actor, which holds the session's projects,
      // answers NOT_FOUND for one outside the worker's (its machine's screen).
      const found = await findSession(deps.db, p.orgId, id);
      if (!found) throw new TroupeError('NOT_FOUND', 'session not found');
      const { agent, usage, workspace, ...transition } = body;
      // The usage's cost is the report's when it names none of its own (the protocol of issue 34).
      const costUsd = transition.costUsd ?? usage?.costUsd;
      const reply = await deps.ask<SessionReply>(sessionAddress(found.key), {
        type: 'session.transition', ...transition, ...(costUsd === undefined ? {} : { costUsd }), orgId: p.orgId, projectIds: p.projectIds,
      });
      // Facts about the run, kept beside the actor's state, and only once the actor took the report from this worker.
      if (agent !== undefined || usage !== undefined || workspace !== undefined) {
        await recordRunReport(deps.db, p.orgId, found.key, p.workerId, { agent, usage, workspace }, new Date(deps.clock.now()));
      }
      // Owed after the end is durable: a worker retrying a `completed` whose reply it lost owes it again, once.
      if (reply.kind === 'transitioned' && reply.newStatus === 'completed') await owePullRequestForRun(deps, p.orgId, found.key);
      // A live run past its per-session budget is stopped once its cost is durable; a worker retrying this report (after
      // a failed stop) checks again (decision 0080). An ended run has nothing to stop: no read on the hot terminal report.
      if (reply.kind === 'transitioned' && costUsd !== undefined && !isTerminal(reply.newStatus)) await stopRunOverBudget(deps, p.orgId, found.key, found.publicId);
      daemonServices(deps).liveness.record(p.workerId, deps.clock.now());
      return { body: withoutKind(reply) };
    },
  });
}
