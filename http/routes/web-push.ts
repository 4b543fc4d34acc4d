import { createECDH } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { notifyUser, vapidKeys } from '../../actors/services/integrations/web-push/index.js';
import { OutboundRefused } from '../../actors/services/integrations/outbound/index.js';
import { publicKeyReply, subscribeBody, subscribeReply, testSendBody, testSendReply, unsubscribeBody, unsubscribeReply } from '../../schemas/agents/web-push.js';
import { deleteSubscription, upsertSubscription } from '../../storage/integrations/web-push.js';
import type { HttpRequest, Route } from '../types.js';
import { route } from '../route.js';

/**
 * Web push (decision 0015). Subscriptions belong to a user, so subscribe, unsubscribe and the test send take a user
 * token or the session cookie; any other credential has no user to notify and gets 403. The endpoint is vetted by
 * the outbound guard when it is stored (an internal address is refused at once, not at the first send) and again
 * on every send. Keys are checked for their real sizes: a P-256 point (65 bytes) and a 16-byte auth secret.
 */

/**
 * Whether the bytes are an uncompressed point on P-256: 65 bytes are not enough, since a point off the curve made
 * every later send to the user throw (issue 16). An ECDH agreement with a throwaway key is the check web-push's own
 * encryption will make.
 */
function isP256Point(point: Buffer): boolean {
  if (point.length !== 65 || point[0] !== 0x04) return false;
  try {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    ecdh.computeSecret(point);
    return true;
  } catch {
    return false;
  }
}

interface SubscribeBody { endpoint: string; keys: { p256dh: string; auth: string } }

function user(req: HttpRequest): { userId: string; orgId: string } {
  const p = req.principal;
  if (!p || p.kind !== 'user') throw new TroupeError('AUTH_HUMAN_ONLY', 'a web-push subscription belongs to a user');
  return { userId: p.userId, orgId: p.orgId };
}

const decodedLength = (b64url: string): number => Buffer.from(b64url, 'base64url').length;

export function webPushRoutes(): Route<Deps>[] {
  return [
    {
      method: 'get', path: '/api/notifications/web-push/public-key', auth: 'org', tags: ['notifications'],
      summary: 'The VAPID public key for PushManager.subscribe, or null when web push is not configured', responseSchema: publicKeyReply,
      async handler(_req, deps) {
        const keys = vapidKeys(deps);
        return { body: { publicKey: keys ? (await keys).publicKey : null } };
      },
    },
    {
      method: 'post', path: '/api/notifications/web-push/subscribe', auth: 'human', tags: ['notifications'],
      summary: 'Store a W3C push subscription for the authenticated user', bodySchema: subscribeBody, responseSchema: subscribeReply,
      async handler(req: HttpRequest<SubscribeBody>, deps) {
        const u = user(req);
        if (!vapidKeys(deps)) throw new TroupeError('CONFLICT', 'web push is not configured on this deployment');
        const { endpoint, keys } = req.body;
        if (decodedLength(keys.p256dh) !== 65 || !isP256Point(Buffer.from(keys.p256dh, 'base64url'))) {
          throw new TroupeError('VALIDATION_FAILED', 'keys.p256dh: not an uncompressed P-256 public key', { field: 'keys.p256dh' });
        }
        if (decodedLength(keys.auth) !== 16) throw new TroupeError('VALIDATION_FAILED', 'keys.auth: not a 16-byte secret', { field: 'keys.auth' });
        try {
          await deps.services.outbound.vet(endpoint);
        } catch (err) {
          if (err instanceof OutboundRefused) throw new TroupeError('VALIDATION_FAILED', `endpoint: ${err.message}`, { field: 'endpoint' });
          throw err;
        }
        const id = await upsertSubscription(deps.db, { orgId: u.orgId, userId: u.userId, endpoint, p256dh: keys.p256dh, auth: keys.auth }, new Date(deps.clock.now()));
        return { status: 201, body: { id } };
      },
      successStatus: 201,
    },
    route({
      method: 'delete', path: '/api/notifications/web-push/subscribe', auth: 'human', tags: ['notifications'], bodyKind: 'json',
      summary: 'Remove the authenticated user\'s subscription for an endpoint', bodySchema: unsubscribeBody, responseSchema: unsubscribeReply,
      async handler(req, deps) {
        const u = user(req);
        const removed = await deleteSubscription(deps.db, u.orgId, u.userId, req.body.endpoint);
        if (!removed) throw new TroupeError('NOT_FOUND', 'no such subscription');
        return { body: { removed: true } };
      },
    }),
    route({
      method: 'post', path: '/api/notifications/web-push/test', auth: 'human', tags: ['notifications'],
      summary: 'Send a test notification to every browser the user subscribed', bodySchema: testSendBody, responseSchema: testSendReply,
      async handler(req, deps) {
        const u = user(req);
        if (!vapidKeys(deps)) throw new TroupeError('CONFLICT', 'web push is not configured on this deployment');
        const outcome = await notifyUser(deps, u.orgId, u.userId, { title: req.body.title ?? 'Troupe', body: req.body.body ?? 'Test notification', tag: 'test' });
        return { body: outcome };
      },
    }),
  ];
}
