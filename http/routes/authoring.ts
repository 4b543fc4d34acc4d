import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { OrgPrincipal } from '../../actors/services/identity/principal.js';
import { changeActorOf } from '../../actors/kinds/workflow/change-actor.js';
import { answerConversation, startConversation, type ConversationPorts } from '../../actors/kinds/authoring/conversation.js';
import { assertValidPlan, candidateDigest } from '../../actors/kinds/authoring/plan.js';
import { proposalAddress } from '../../actors/kinds/authoring/proposal-actor.js';
import type { ProposalAppendMsg, ProposalReply } from '../../actors/kinds/authoring/proposal-machine.js';
import { simulate } from '../../actors/kinds/authoring/simulation.js';
import { authoringSnapshot, cardBaseDigestOf } from '../../actors/kinds/authoring/snapshot.js';
import { synthesize } from '../../actors/kinds/authoring/synthesis.js';
import { assertValidCard, cardCandidateDigest, synthesizeAgentCard } from '../../actors/kinds/authoring/card-synthesis.js';
import { projectRoleOf, projectsInOrg } from '../../storage/identity/orgs.js';
import { findPolicy, listPolicyVersions } from '../../storage/governance/policies.js';
import { findProposal, listProposals, listProposalVersions } from '../../storage/authoring/proposals.js';
import * as schemas from '../../schemas/authoring/http.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';

/**
 * Authoring helpers (spec 1.3, 2.2, 2.3, 4.1, 4.8; CONTRACT.md "Authoring"; ops/decisions/0011-authoring.md).
 * Any org credential but a runtime JWT: user token, session cookie, API key or machine token (`auth: 'org'`).
 * The project must be the caller's org's (else 404). Conversation, synthesis, simulation and reads need Cedar
 * `read` on the project; apply needs `edit` on the Proposal. Only apply writes, and only to the proposal store.
 */

const TAGS = ['authoring'];

interface InProject { readonly p: OrgPrincipal; readonly projectId: string }

/** The caller and a project of its org that it may read; 404 for a project of another org or none. */
const readProject: RouteAuthorization<Deps, any, InProject> = {
  async find(req, deps, p) {
    const projectId = req.params.projectId ?? '';
    if (!(await projectsInOrg(deps.db, p.orgId, [projectId])).has(projectId)) throw new TroupeError('NOT_FOUND', 'project not found');
    return { p, projectId };
  },
  action: 'read',
  resource: (_req, p, { projectId }) => ({ type: 'Project', id: projectId, orgId: p.orgId, projectId }),
};

function conversationPorts(deps: Deps): ConversationPorts {
  return {
    key: deps.secrets.derive('authoring-state'),
    now: () => deps.clock.now(),
    markAnswered: (stateMac, ttlMs) => deps.cache.setIfAbsent(`authoring:answered:${stateMac}`, '1', ttlMs),
    onReplayStoreDown: (err) => deps.log.warn({ err }, 'authoring: replay store unavailable; conversation replay check skipped'),
  };
}

const stale = (which: string): TroupeError =>
  new TroupeError('CONFLICT', `stale ${which}: it no longer matches the current state; synthesize again`, { stale: which });

export function authoringRoutes(): Route<Deps>[] {
  return [...conversationRoutes(), ...proposalRoutes()];
}

function conversationRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/projects/:projectId/authoring/conversation', auth: 'org', tags: TAGS,
      summary: 'Advance a builder conversation: `start` {goal, target?, workflowId?, agentCardId?} asks round 1 (a workflow: '
        + 'outcome; target agentCard: role); `answer` {state, answer, conversation} revalidates the signed client-carried '
        + 'state and asks the next round (steps, then guardrails; for an agent card instructions, then abilities); after the '
        + 'third answer status is `ready` with the synthesisRequest. A changed, '
        + 'expired, replayed or out-of-order state, a malformed answer, or a fourth round is 400. Never writes.',
      bodySchema: schemas.conversationBody, responseSchema: schemas.conversationReply,
      authorize: readProject,
      async handler(req, deps, { found: { p, projectId } }) {
        const scope = { orgId: p.orgId, projectId, caller: changeActorOf(p).label };
        const body = req.body;
        if (body.action === 'start') {
          const target = body.target ?? 'workflow';
          if (target === 'agentCard' && body.workflowId) {
            throw new TroupeError('VALIDATION_FAILED', "field 'workflowId' is not allowed with target agentCard", { field: 'workflowId' });
          }
          // The workflow or card, when named, must be one of this project's (org's); checked now so the state never names another.
          if (body.workflowId) await authoringSnapshot(deps.db, p.orgId, projectId, body.workflowId);
          if (target === 'agentCard' && body.agentCardId) await cardBaseDigestOf(deps.db, p.orgId, body.agentCardId);
          const input = {
            goal: (body.goal ?? '').trim(), target,
            ...(body.workflowId ? { workflowId: body.workflowId } : {}), ...(body.agentCardId ? { agentCardId: body.agentCardId } : {}),
          };
          return { body: startConversation(scope, input, conversationPorts(deps)) };
        }
        return { body: await answerConversation(scope, body.state!, body.conversation!, body.answer!, conversationPorts(deps)) };
      },
    }),
    route({
      method: 'post', path: '/api/projects/:projectId/authoring/synthesize', auth: 'org', tags: TAGS,
      summary: 'Synthesize a draft from a synthesis request: clarification questions when something is missing, else a '
        + 'deterministic candidate (same request, same bytes): a plan built from the project vocabulary and valid against '
        + 'the v2 definition schema, or for target agentCard a card valid against the agent-card payload schema; with its '
        + 'candidate, base (workflow or card version), vocabulary and policy digests. Never writes.',
      bodySchema: schemas.synthesizeBody, responseSchema: schemas.synthesizeReply,
      authorize: readProject,
      async handler(req, deps, { found: { p, projectId } }) {
        const request = req.body.synthesisRequest;
        if (request.target === 'agentCard') {
          const agentCardId = request.agentCardId ?? '';
          const [snapshot, baseDigest] = await Promise.all([
            authoringSnapshot(deps.db, p.orgId, projectId, ''), cardBaseDigestOf(deps.db, p.orgId, agentCardId),
          ]);
          const drafted = synthesizeAgentCard(request);
          if (drafted.status === 'question') return { body: { status: 'question', questions: drafted.questions } };
          return {
            body: {
              status: 'candidate',
              candidate: { target: 'agentCard', agentCardId, card: drafted.card },
              digests: {
                candidateDigest: cardCandidateDigest(drafted.card), baseDigest,
                vocabularyDigest: snapshot.vocabularyDigest, policyDigest: snapshot.policyDigest,
              },
            },
          };
        }
        const workflowId = request.workflowId ?? '';
        const snapshot = await authoringSnapshot(deps.db, p.orgId, projectId, workflowId);
        const result = synthesize(request, snapshot.vocabulary);
        if (result.status === 'question') return { body: { status: 'question', questions: result.questions } };
        return {
          body: {
            status: 'candidate',
            candidate: { target: request.target, workflowId, plan: result.plan },
            digests: {
              candidateDigest: candidateDigest(request.target, result.plan),
              baseDigest: snapshot.baseDigest, vocabularyDigest: snapshot.vocabularyDigest, policyDigest: snapshot.policyDigest,
            },
          },
        };
      },
    }),
  ];
}

function proposalRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/projects/:projectId/authoring/apply', auth: 'org', tags: TAGS, successStatus: 200,
      summary: 'Store a reviewed candidate (a plan, or for target agentCard a card) as an isolated proposal: revalidates it and the candidate, base, '
        + 'vocabulary, policy and proposal-version digests (each stale one is 409 with `details.stale` naming it), then '
        + 'appends an immutable proposal version (1 for a new proposal; pass proposalId and proposalVersion to append). '
        + 'The audit entry commits with the version, so auditPending is false. Runtime workflows and agent cards never change.',
      bodySchema: schemas.applyBody, responseSchema: schemas.applyReply,
      authorize: readProject,
      async handler(req, deps, { found: { p, projectId } }) {
        const body = req.body;
        const proposalId = body.proposalId ?? randomUUID();
        // The second decision, on the proposal the body names (or a new one): the route declares the project's read.
        await deps.authz.authorize(p, 'edit', { type: 'Proposal', id: proposalId, orgId: p.orgId, projectId });
        const workflowId = body.workflowId ?? '';
        const agentCardId = body.agentCardId ?? '';
        const card = body.target === 'agentCard';
        const [snapshot, baseDigest] = await Promise.all([
          authoringSnapshot(deps.db, p.orgId, projectId, workflowId),
          card ? cardBaseDigestOf(deps.db, p.orgId, agentCardId) : undefined,
        ]);
        // The same digest rules for both targets: the candidate, its base (workflow or card version), the project's
        // vocabulary and its active policies.
        const candidate = card ? cardCandidateDigest(body.card!) : candidateDigest(body.target, body.plan!);
        if (candidate !== body.candidateDigest) throw stale('candidateDigest');
        if ((baseDigest ?? snapshot.baseDigest) !== body.baseDigest) throw stale('baseDigest');
        if (snapshot.vocabularyDigest !== body.vocabularyDigest) throw stale('vocabularyDigest');
        if (snapshot.policyDigest !== body.policyDigest) throw stale('policyDigest');
        if (card) assertValidCard(body.card);
        else assertValidPlan(body.plan!, snapshot.vocabulary);
        const msg: ProposalAppendMsg = {
          type: 'proposal.append', orgId: p.orgId, projectId, target: body.target, workflowId,
          expectedVersion: body.proposalVersion ?? 0,
          ...(card ? { card: body.card!, agentCardId } : { plan: body.plan! }),
          digests: { candidateDigest: body.candidateDigest, baseDigest: body.baseDigest, vocabularyDigest: body.vocabularyDigest, policyDigest: body.policyDigest },
          by: changeActorOf(p).label,
        };
        const reply = await deps.ask<ProposalReply>(proposalAddress(proposalId), msg);
        return { body: { applied: true, target: reply.target, proposalId: reply.proposalId, status: reply.status, version: reply.version, auditPending: false } };
      },
    }),
    route({
      method: 'get', path: '/api/projects/:projectId/authoring/proposals', auth: 'org', tags: TAGS,
      summary: 'List the project\'s proposals, newest first', querySchema: schemas.listProposalsQuery, responseSchema: schemas.listProposalsReply,
      authorize: readProject,
      async handler(req, deps, { found: { p, projectId } }) {
        const limit = Number(req.query.get('limit') ?? 50);
        const offset = Number(req.query.get('offset') ?? 0);
        return { body: { proposals: await listProposals(deps.db, p.orgId, projectId, { limit, offset }) } };
      },
    }),
    route({
      method: 'get', path: '/api/projects/:projectId/authoring/proposals/:id', auth: 'org', tags: TAGS,
      summary: 'Read a proposal with its immutable versions, newest first; another org\'s or project\'s is 404',
      responseSchema: schemas.proposalReply,
      authorize: readProject,
      async handler(req, deps, { found: { p, projectId } }) {
        const proposal = await findProposal(deps.db, p.orgId, projectId, req.params.id ?? '');
        if (!proposal) throw new TroupeError('NOT_FOUND', 'proposal not found');
        return { body: { proposal, versions: await listProposalVersions(deps.db, p.orgId, proposal.id) } };
      },
    }),
    route({
      method: 'post', path: '/api/projects/:projectId/authoring/simulate', auth: 'org', tags: TAGS,
      summary: 'Simulate a canvas against one exact policy revision joined with the default set: each node is resolved '
        + 'from the vocabulary and asked of Cedar as the caller (agent: dispatch on Session; approval: operate on '
        + 'ApprovalGate; condition, loop, wait: operate on WorkflowRun; the resource id is the nodeKey). Unknown nodes, '
        + 'tools with no palette match, no permitting policy and evaluation errors deny. Over 200 nodes is 413. Read-only.',
      bodySchema: schemas.simulateBody, responseSchema: schemas.simulateReply,
      authorize: readProject,
      async handler(req, deps, { found: { p, projectId } }) {
        const { policyId, policyVersion, plan } = req.body;
        const policy = await findPolicy(deps.db, p.orgId, policyId);
        // A policy of another project is not part of this project's policy set: as absent as another org's.
        if (!policy || (policy.scope === 'project' && policy.scopeId !== projectId)) throw new TroupeError('NOT_FOUND', 'policy not found');
        const revision = (await listPolicyVersions(deps.db, p.orgId, policyId)).find((v) => v.version === policyVersion);
        if (!revision) throw new TroupeError('NOT_FOUND', 'policy version not found');
        const snapshot = await authoringSnapshot(deps.db, p.orgId, projectId, '');
        const projectRole = p.kind === 'user' ? await projectRoleOf(deps.db, p.orgId, projectId, p.userId) : undefined;
        const result = simulate({
          principal: p, projectRole, orgId: p.orgId, projectId, plan, vocabulary: snapshot.vocabulary,
          policy: { id: policy.id, version: revision.version, cedarPolicy: revision.cedarPolicy },
        });
        return { body: { decision: result.decision, policy: { id: policy.id, version: revision.version }, nodes: result.nodes } };
      },
    }),
  ];
}
