import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { roleAtLeast, type OrgPrincipal } from '../../actors/services/identity/principal.js';
import { credentialServices, rotationCursor, rotationEventId } from '../../actors/services/credentials/rotation.js';
import { upsertCredential } from '../../storage/credentials/credentials.js';
import { credentialKind, credentialReply, putCredentialBody, rotateBody, rotateReply } from '../../schemas/daemon-extras/bodies.js';
import { assertOwnOrg, orgPrincipal, requesterOf } from '../principal.js';
import type { Route } from '../types.js';
import { route } from '../route.js';

/**
 * Credentials (CONTRACT "Credentials", spec 4.2, decision 0012): an admin stores a credential through a provider
 * of the registry (sealed at rest), a rotation re-resolves it and pushes the value to every live rotate-stream
 * subscriber of the org, and daemons listen on the rotate stream with their runtime JWT.
 */

const kindPattern = new RegExp(credentialKind.pattern);

/**
 * The audit entry of a credential change (spec 4.2: deferred and non-fatal): durable in the audit outbox before the
 * reply, appended to the chain by the outbox drain, so neither the chain lock nor a crash touches the request
 * (decision 0041). The value itself is never audited.
 */

/**
 * Spec 4.2: user and session callers need admin or owner; API keys pass on the org guard, but only keys that may
 * write: a read-scope key rotating the org's credentials would be a write by a key made for reading (issue 16).
 */
async function mayRotate(deps: Deps, p: OrgPrincipal, kind: string): Promise<void> {
  switch (p.kind) {
    case 'apiKey':
      if (!p.scopes.includes('write') && !p.scopes.includes('admin')) {
        throw new TroupeError('AUTH_FORBIDDEN', 'rotating credentials takes an API key with the write scope');
      }
      return;
    case 'user':
      if (!roleAtLeast(p.orgRole, 'admin')) throw new TroupeError('AUTH_FORBIDDEN', 'rotating credentials takes an org admin or owner');
      return;
    default:
      // Machine tokens are not named by the spec; they act by scope like everywhere else (admin scope). Cedar is
      // asked here, not declared on the route, because only this kind of caller is decided by it.
      await deps.authz.authorize(p, 'manage-credentials', { type: 'Credential', id: kind, orgId: p.orgId });
  }
}

export function credentialRoutes(): Route<Deps>[] {
  return [...orgCredentialRoutes(), ...daemonCredentialRoutes()];
}

function orgCredentialRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'put',
      path: '/api/org/:orgId/credentials/:kind',
      auth: 'org',
      summary: 'Store a credential of the org, sealed at rest, resolved through its provider (org admin or owner)',
      tags: ['credentials'],
      bodySchema: putCredentialBody,
      responseSchema: credentialReply,
      authorize: {
        async find(req, _deps, p) {
          assertOwnOrg(req, p);
          const kind = req.params.kind ?? '';
          if (!kindPattern.test(kind)) throw new TroupeError('VALIDATION_FAILED', 'kind must match ' + credentialKind.pattern, { field: 'kind' });
          return kind;
        },
        action: 'manage-credentials',
        resource: (_req, p, kind) => ({ type: 'Credential', id: kind, orgId: p.orgId }),
      },
      async handler(req, deps, { found: kind }) {
        const p = orgPrincipal(req);
        const body = req.body;
        const services = credentialServices(deps);
        if (!services.providers.ids.includes(body.provider)) {
          throw new TroupeError('VALIDATION_FAILED', `provider must be one of: ${services.providers.ids.join(', ')}`, { field: 'provider' });
        }
        const { sealedValue } = services.providers.get(body.provider).accept({ orgId: p.orgId, kind, value: body.value }, deps.secrets);
        const at = deps.clock.now();
        // The entry commits with the credential: stored without its audit entry is impossible.
        await deps.db.transaction(async (trx) => {
          await upsertCredential(trx, { orgId: p.orgId, kind, provider: body.provider, sealedValue, updatedBy: requesterOf(p), at });
          await deps.services.audit.record({
            orgId: p.orgId, type: 'credential.stored', actor: requesterOf(p), subject: kind, payload: { provider: body.provider }, at: new Date(at),
          }, trx);
        });
        return { body: { orgId: p.orgId, kind, provider: body.provider, updatedAt: new Date(at).toISOString() } };
      },
    }),
  ];
}

function daemonCredentialRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post',
      path: '/api/daemon/credentials/rotate',
      auth: 'org',
      summary: "Re-resolve an (orgId, kind) credential and push it to every live rotate-stream subscriber of the org",
      tags: ['credentials', 'daemon'],
      bodySchema: rotateBody,
      responseSchema: rotateReply,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const body = req.body;
        // The cross-tenant guard comes first: a foreign orgId learns nothing about roles or credentials.
        if (body.orgId !== p.orgId) throw new TroupeError('TENANT_MISMATCH');
        await mayRotate(deps, p, body.kind);
        const result = await credentialServices(deps).rotate(p.orgId, body.kind);
        await deps.services.audit.recordOrLog({
          orgId: p.orgId, type: 'credential.rotated', actor: requesterOf(p), subject: body.kind,
          payload: { kind: body.kind, sessionCount: result.sessionCount, rotatedAt: result.rotatedAt }, at: new Date(deps.clock.now()),
        });
        return { body: result };
      },
    }),
    route({
      method: 'get',
      path: '/api/daemon/credentials/stream',
      auth: 'runtime',
      sse: true,
      summary: "Rotate stream (SSE): `credential.rotated` events `{kind, value, rotatedAt}` of the daemon's org; `ready` once subscribed. "
        + '`Last-Event-ID` (a rotation\'s id, or `0` for every kind\'s last rotation) first replays the last rotation of each kind made after it, as it was pushed',
      sseEvents: {
        ready: { schemaName: 'CredentialStreamReadyEvent', schema: { type: 'object', required: ['orgId'], properties: { orgId: { type: 'string' } } } },
        'credential.rotated': {
          schemaName: 'CredentialRotatedEvent',
          schema: {
            type: 'object', required: ['kind', 'value', 'rotatedAt'],
            properties: { kind: { type: 'string' }, value: { type: 'string' }, rotatedAt: { type: 'string', format: 'date-time' } },
          },
        },
      },
      tags: ['credentials', 'daemon', 'streams'],
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const services = credentialServices(deps);
        const lastEventId = req.headers['last-event-id'];
        const resume = lastEventId ? rotationCursor(lastEventId) : undefined;
        if (lastEventId && resume === undefined) {
          throw new TroupeError('VALIDATION_FAILED', 'Last-Event-ID must be a rotation\'s event id (<rotatedAt>.<kind>) or 0', { field: 'last-event-id' });
        }
        return {
          kind: 'sse',
          async open(stream) {
            const unsubscribe = await services.subscribe(p.orgId, (rotation) => {
              stream.send({ id: rotationEventId(rotation), event: 'credential.rotated', data: rotation });
            }, resume);
            stream.onClose(unsubscribe);
            stream.send({ event: 'ready', data: { orgId: p.orgId } });
          },
        };
      },
    }),
  ];
}
