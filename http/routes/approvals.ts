import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { ResourceRef } from '../../actors/services/identity/ports.js';
import type { Route } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal } from '../principal.js';
import { approvalGateAddress } from '../../actors/kinds/approval-gate/actor.js';
import type { GateMsg, GateView } from '../../actors/kinds/approval-gate/machine.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import { findGate, listGates, runSummaries, type GateRow } from '../../storage/workflows/runs.js';
import * as schemas from '../../schemas/workflows/http.js';

/**
 * Approval gates (CONTRACT.md "Approval gates", spec 4.5). Deciding is for humans only (the edge refuses other
 * credentials with 403); the decider's identity and role are the authenticated user's, and a claimed
 * `actorRole` that differs from the real org role is refused. The gate actor lets exactly one decision through.
 */

const gateResource = (g: { id: string; orgId: string; projectId: string | null; requiredRole: string | null }): ResourceRef => ({
  type: 'ApprovalGate', id: g.id, orgId: g.orgId,
  ...(g.projectId ? { projectId: g.projectId } : {}),
  ...(g.requiredRole ? { attrs: { requiredRole: g.requiredRole } } : {}),
});

const publicGate = (g: GateRow | GateView) => ({
  id: g.id, projectId: g.projectId, title: g.title, issue: g.issue, sessionId: g.sessionId, runId: g.runId, nodeId: g.nodeId,
  escalation: g.escalation, requiredRole: g.requiredRole, status: g.status, decidedBy: g.decidedBy, comment: g.comment, driver: g.driver,
  createdAt: g.createdAt, decidedAt: g.decidedAt,
});

export function approvalRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/approval-gates', auth: 'org', tags: ['approvals'],
      summary: 'Open an approval gate in a project', bodySchema: schemas.createGateBody, successStatus: 201, responseSchema: schemas.openGateReply,
      authorize: {
        async find(req, deps, p) {
          if (!(await projectsInOrg(deps.db, p.orgId, [req.body.projectId])).has(req.body.projectId)) throw new TroupeError('NOT_FOUND', 'project not found');
          return randomUUID();
        },
        action: 'operate',
        resource: (req, p, id) => ({ type: 'ApprovalGate', id, orgId: p.orgId, projectId: req.body.projectId }),
      },
      async handler(req, deps, { found: id }) {
        const p = orgPrincipal(req);
        const b = req.body;
        const msg: GateMsg = {
          type: 'gate.open', orgId: p.orgId, projectId: b.projectId, title: b.title, issue: b.issue ?? null,
          sessionId: b.sessionId ?? null, runId: null, nodeId: null, escalation: b.escalation ?? null, requiredRole: b.requiredRole ?? null,
        };
        const gate = await deps.ask<GateView>(approvalGateAddress(id), msg);
        return { status: 201, body: { gate: publicGate(gate) } };
      },
    }),
    {
      method: 'get', path: '/api/approval-gates', auth: 'org', tags: ['approvals'],
      summary: 'Approval gates of the caller\'s org, oldest first; filter by issue or status; `for=me`: the pending gates the caller may decide. '
        + 'Each gate says whether the caller may decide it and, when a run opened it, the run\'s workflow and pinned version',
      querySchema: schemas.listGatesQuery, responseSchema: schemas.listGatesReply,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const issue = req.query.get('issue') ?? undefined;
        const mine = req.query.get('for') === 'me';
        const status = mine ? 'pending' : req.query.get('status') ?? undefined;
        const gates = await listGates(deps.db, p.orgId, { ...(issue !== undefined ? { issue } : {}), ...(status !== undefined ? { status } : {}) });
        // Project-scoped gates are shown only where the caller may read that project.
        const readable = new Map<string, boolean>();
        const visible = [];
        for (const g of gates) {
          const key = g.projectId ?? '';
          let ok = readable.get(key);
          if (ok === undefined) {
            ok = (await deps.authz.check(p, 'read', gateResource({ ...g, requiredRole: null }))).allowed;
            readable.set(key, ok);
          }
          if (!ok) continue;
          // Only a person decides gates, and only where their role meets the gate's (Cedar `decide`).
          const mayDecide = p.kind === 'user' && g.status === 'pending' && (await deps.authz.check(p, 'decide', gateResource(g))).allowed;
          if (mine && !mayDecide) continue;
          visible.push({ ...publicGate(g), mayDecide });
        }
        const runs = await runSummaries(deps.db, p.orgId, visible.flatMap((g) => (g.runId ? [g.runId] : [])));
        return { body: { gates: visible.map((g) => ({ ...g, run: g.runId ? runs.get(g.runId) ?? null : null })) } };
      },
    },
    route({
      method: 'post', path: '/api/approval-gates/:id/decide', auth: 'human', tags: ['approvals'],
      summary: 'Decide a gate (approve, reject or escalate; either tense) as the authenticated user', bodySchema: schemas.decideGateBody,
      responseSchema: schemas.decideGateReply,
      authorize: {
        async find(req, deps, p) {
          if (p.kind !== 'user') throw new TroupeError('AUTH_HUMAN_ONLY');
          if (req.body.actorRole !== undefined && req.body.actorRole !== p.orgRole) {
            throw new TroupeError('AUTH_FORBIDDEN', 'actorRole does not match your role in this org');
          }
          const gate = await findGate(deps.db, p.orgId, req.params.id ?? '');
          if (!gate) throw new TroupeError('NOT_FOUND', 'approval gate not found');
          return { gate, decider: p };
        },
        action: 'decide',
        resource: (_req, _p, { gate }) => gateResource(gate),
      },
      async handler(req, deps, { found: { gate, decider: p } }) {
        const comment = req.body.comment?.trim();
        const msg: GateMsg = {
          type: 'gate.decide', orgId: p.orgId, decision: schemas.gateDecisionWords[req.body.decision], decidedBy: { userId: p.userId, role: p.orgRole },
          ...(comment ? { comment } : {}),
        };
        const decided = await deps.ask<GateView>(approvalGateAddress(gate.id), msg);
        return { body: { resolved: true, decision: decided.status, gate: publicGate(decided) } };
      },
    }),
  ];
}
