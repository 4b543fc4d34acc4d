import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';
import { orgPrincipal } from '../principal.js';
import { listAudit, verifyAudit } from '../../storage/audit-log.js';
import { auditPageReply, auditQuery, auditVerifyReply } from '../../schemas/workflows/http.js';
import { findOrg } from '../../storage/identity/orgs.js';

/**
 * The org's hash-chained audit log (CONTRACT.md "Audit"): paged newest first, and verified by recomputing the
 * chain. Always the caller's own org; Cedar `read` on the org's Audit resource.
 */
const readAudit: RouteAuthorization<Deps> = { action: 'read', resource: (_req, p) => ({ type: 'Audit', id: p.orgId, orgId: p.orgId }) };

export function auditRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/audit', auth: 'org', tags: ['audit'],
      summary: 'Audit entries of the caller\'s org, newest first; pass nextCursor back as cursor for older ones',
      querySchema: auditQuery, responseSchema: auditPageReply,
      authorize: readAudit,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const limit = req.query.get('limit');
        return { body: await listAudit(deps.db, p.orgId, { ...(limit ? { limit: Number(limit) } : {}), cursor: req.query.get('cursor') }) };
      },
    }),
    route({
      method: 'get', path: '/api/audit/verify', auth: 'org', tags: ['audit'],
      summary: 'Recompute the org\'s audit chain and report the first broken link', responseSchema: auditVerifyReply,
      authorize: readAudit,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        return { body: await verifyAudit(deps.db, p.orgId) };
      },
    }),
    {
      // The operator's check (`troupe audit verify --org ID`): the platform admin verifies any org's chain without
      // holding that org's credentials.
      method: 'get', path: '/api/admin/orgs/:orgId/audit/verify', auth: 'admin', tags: ['audit', 'admin'],
      summary: 'Recompute one org\'s audit chain (platform admin) and report the first broken link', responseSchema: auditVerifyReply,
      async handler(req, deps) {
        const orgId = req.params.orgId!;
        if (!(await findOrg(deps.db, orgId))) throw new TroupeError('NOT_FOUND', 'org not found');
        return { body: await verifyAudit(deps.db, orgId) };
      },
    },
  ];
}
