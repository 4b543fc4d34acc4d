import type { Deps } from '../../actors/services/deps.js';
import { orgSettings, setOrgSettings, type OrgSettings } from '../../storage/sessions/transcript-retention.js';
import { orgSettingsBody, orgSettingsReply } from '../../schemas/sessions/transcript.js';
import { assertOwnOrg, orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import { auditTrail } from './audit-trail.js';
import type { Route } from '../types.js';

/**
 * The org's settings (issue 35 §1): for now how long session transcripts are kept. Reading is anyone's in the org;
 * changing them is Cedar `manage-org` on the org (admins and owners, admin-scoped keys), audited
 * (`org.settings.changed`, before and after). orgId must be the caller's org (403 TENANT_MISMATCH otherwise, as every
 * `/api/org/{orgId}/…` route).
 */
const reply = (orgId: string, s: OrgSettings) => ({ orgId, ...s });

const ownOrg = (action: 'read' | 'manage-org') => ({
  find: async (req: Parameters<typeof assertOwnOrg>[0], _deps: Deps, p: Parameters<typeof assertOwnOrg>[1]) => { assertOwnOrg(req, p); },
  action,
  resource: (_req: unknown, p: { orgId: string }) => ({ type: 'Org' as const, id: p.orgId, orgId: p.orgId }),
});

export function orgSettingsRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/org/:orgId/settings', auth: 'org', tags: ['org'],
      summary: "The org's settings: `transcriptRetentionDays` (30 until set; 0 keeps transcripts forever)",
      responseSchema: orgSettingsReply,
      authorize: ownOrg('read'),
      async handler(req, deps) {
        const orgId = orgPrincipal(req).orgId;
        return { body: reply(orgId, await orgSettings(deps.db, orgId)) };
      },
    }),
    route({
      method: 'put', path: '/api/org/:orgId/settings', auth: 'org', tags: ['org'],
      summary: "Change the org's settings (admins and owners): `transcriptRetentionDays`, days a session's transcript is kept after its last entry (0: forever)",
      description: 'Members absent from the body keep their value. Transcripts older than the retention are deleted by every node\'s '
        + 'sweeper in small batches within minutes; the last 64 KiB of output in a session\'s detail stay. A change is audited '
        + '(`org.settings.changed`).',
      bodySchema: orgSettingsBody,
      responseSchema: orgSettingsReply,
      authorize: ownOrg('manage-org'),
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const by = requesterOf(p);
        const { before, after } = await setOrgSettings(deps.db, p.orgId, req.body, by, new Date(deps.clock.now()));
        if (before.transcriptRetentionDays !== after.transcriptRetentionDays) {
          await auditTrail(deps, p.orgId, 'org.settings.changed', by, p.orgId, {
            before: { transcriptRetentionDays: before.transcriptRetentionDays }, after: { transcriptRetentionDays: after.transcriptRetentionDays },
          });
        }
        return { body: reply(p.orgId, after) };
      },
    }),
  ];
}
