import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { newTrackerSessionId, publicSessionId, sessionAddress, sessionKey, type SessionReply } from '../../actors/kinds/session/index.js';
import { rememberSession, sessionKeyByTracker } from '../../storage/sessions/queries.js';
import { trackerIssueProblem } from '../../storage/sessions/github-issue-ref.js';
import { dispatchReads, recordRoutingDecision } from '../../storage/analytics/router.js';
import { chooseProvider, DEFAULT_WORK_TYPE } from '../../actors/services/analytics/router.js';
import type { Route } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { assertSignedDispatch, releaseNonceAfter } from '../../actors/services/integrations/requesters/signed-dispatch.js';
import { refOfDispatch, repositoryOfDispatch, workspaceInputProblem } from './dispatch-workspace.js';
import { queueingOfDispatch, supersedeHolders } from './dispatch-concurrency.js';
import { dispatchBody, sessionIdParam } from './session-schemas.js';
import { assertSpendBelow } from '../../actors/services/budgets/budgets.js';
import { budgetExceededError } from '../../schemas/budgets/http.js';

/**
 * `POST /api/agent-dispatch`: a new session, pending until a worker of its project claims it, on the provider the
 * caller names or the router chooses.
 */
export function dispatchRoute(): Route<Deps> {
  return route({
    method: 'post',
    path: '/api/agent-dispatch', rateLimit: 'dispatch',
    auth: 'org',
    summary: 'Dispatch an agent session (pending until a worker of the project claims it)',
    tags: ['sessions'],
    bodySchema: dispatchBody,
    successStatus: 201,
    errorResponses: { '409': budgetExceededError },
    responseSchema: { type: 'object', required: ['sessionId', 'status'], properties: { sessionId: sessionIdParam, status: { const: 'pending' } } },
    authorize: {
      async find(req, deps, p) {
        // Checked like the schema, before the signature's nonce is spent: a refused reference dispatched nothing.
        const issueProblem = req.body.trackerIssue === undefined ? null : trackerIssueProblem(req.body.trackerIssue);
        if (issueProblem !== null) throw new TroupeError('VALIDATION_FAILED', issueProblem, { field: 'trackerIssue' });
        workspaceInputProblem(req.body);
        // Signed-requester checks (spec 5.5, decision 0014) run before anything is read or created: a bound credential
        // whose requester holds a key must sign this exact request.
        const signed = await assertSignedDispatch(deps, p, req);
        try {
          // The router's arms come in the same statement as the project check, for the handler to choose from.
          const { projectKnown, arms, monthlyBudgetUsd } = await dispatchReads(deps.db, p.orgId, req.body.projectId, req.body.provider === undefined);
          if (!projectKnown) throw new TroupeError('NOT_FOUND', 'project not found', { field: 'projectId' });
          return { signed, arms, monthlyBudgetUsd };
        } catch (err) {
          await releaseNonceAfter(deps, signed, err).catch(() => undefined);
          throw err;
        }
      },
      // A dispatch refused for an outage did not happen: its retry, the same signed request, is not a replay.
      release: ({ signed }, err, deps) => releaseNonceAfter(deps, signed, err),
      action: 'dispatch',
      resource: (req, p) => ({ type: 'Session', id: 'new', orgId: p.orgId, projectId: req.body.projectId }),
    },
    async handler(req, deps, { found: { arms, monthlyBudgetUsd } }) {
      const p = orgPrincipal(req);
      const body = req.body;
      const trackerSessionId = body.trackerSessionId ?? newTrackerSessionId();
      // The org's own session for this tracker id when it has one (also one made before ids were org-scoped).
      const existing = body.trackerSessionId !== undefined ? await sessionKeyByTracker(deps.db, p.orgId, trackerSessionId) : undefined;
      // After Cedar, so a caller who may not dispatch learns nothing of the budget (decision 0080). A retry of a
      // dispatch that already made its session is answered as the dispatch was, never refused for the spend since.
      if (existing === undefined) await assertSpendBelow(deps.db, p.orgId, body.projectId, monthlyBudgetUsd, deps.clock.now());
      const key = existing ?? sessionKey(p.orgId, trackerSessionId);
      const sessionId = publicSessionId(trackerSessionId);
      const repository = await repositoryOfDispatch(deps.db, p.orgId, body.projectId, body.repository);
      const ref = refOfDispatch(repository, body.ref);
      const queueing = await queueingOfDispatch(deps.db, p.orgId, key, body, repository, ref);
      // No provider named: Thompson sampling over the org's router posteriors, seeded by the request id so the
      // choice is reproducible (decision 0013). Null while the org has no arms yet; the worker then decides.
      const routed = body.provider === undefined
        ? chooseProvider(arms, body.workType ?? DEFAULT_WORK_TYPE, req.requestId)
        : undefined;
      const reply = await deps.ask<SessionReply>(sessionAddress(key), {
        type: 'session.dispatch', orgId: p.orgId, projectId: body.projectId, trackerSessionId, prompt: body.prompt,
        agentCardId: body.agentCardId ?? null, trackerIssue: body.trackerIssue ?? null, workType: body.workType ?? null,
        provider: body.provider ?? routed?.provider ?? null, requestedBy: requesterOf(p),
        repository, ref, agent: body.agent ?? null, priority: queueing.priority, concurrencyKey: queueing.concurrencyKey,
      });
      if (reply.kind !== 'dispatched') throw new TroupeError('INTERNAL', 'unexpected reply to dispatch');
      // A fresh tracker id made a new session in this project; a named one may have found an older session elsewhere.
      if (body.trackerSessionId === undefined) rememberSession(deps.db, p.orgId, { key, publicId: sessionId, projectId: body.projectId });
      await supersedeHolders(deps, p.orgId, queueing, sessionId);
      if (routed !== undefined) {
        await recordRoutingDecision(deps.db, { orgId: p.orgId, sessionId: key, requestId: req.requestId, choice: routed, at: deps.clock.now() });
      }
      return { status: 201, body: { sessionId, status: reply.status } };
    },
  });
}
