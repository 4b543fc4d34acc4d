// web-push is imported where it is used: most nodes never send a push, and loading it cost every start (decision 0051).
import type { Deps } from '../../deps.js';
import { OutboundRefused } from '../outbound/index.js';
import { deleteSubscriptionById, subscriptionsOf, type PushSubscriptionRow } from '../../../../storage/integrations/web-push.js';
import { vapidKeys } from './vapid.js';

/**
 * Sends notifications to a user's browsers (RFC 8030 push, RFC 8291 aes128gcm payload encryption, RFC 8292 VAPID).
 * The `web-push` library builds the encrypted, signed request; it is sent through the outbound guard, because a
 * push endpoint is a URL the user's browser handed us. A 404 or 410 from the push service means the subscription
 * is gone for good, so it is removed. Delivery is best effort: failures are reported, never thrown at the caller.
 */

/** Push services keep an undelivered message this long (seconds) before dropping it. */
const PUSH_TTL_SECONDS = 24 * 3600;
const PUSH_TIMEOUT_MS = 10_000;

export interface PushNotification {
  readonly title: string;
  readonly body?: string;
  readonly url?: string;
  readonly tag?: string;
}

export interface PushOutcome {
  readonly sent: number;
  readonly removed: number;
  readonly failed: number;
}

export async function sendToSubscription(deps: Deps, sub: PushSubscriptionRow, notification: PushNotification): Promise<'sent' | 'gone' | 'failed'> {
  const keys = await vapidKeys(deps);
  if (!keys) return 'failed';
  try {
    // Inside the try: a stored key web-push cannot encrypt to (a point off the curve) fails this subscription only.
    const { default: webpush } = await import('web-push');
    const details = webpush.generateRequestDetails(
      { endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } },
      JSON.stringify(notification),
      { vapidDetails: { subject: keys.subject, publicKey: keys.publicKey, privateKey: keys.privateKey }, TTL: PUSH_TTL_SECONDS, contentEncoding: 'aes128gcm' },
    );
    const res = await deps.services.outbound.request(details.endpoint, {
      method: 'POST', headers: details.headers as Record<string, string>, body: details.body ?? Buffer.alloc(0),
      timeoutMs: PUSH_TIMEOUT_MS, maxBytes: 64 * 1024, maxRedirects: 0,
    });
    if (res.status === 404 || res.status === 410) {
      await deleteSubscriptionById(deps.db, sub.id);
      return 'gone';
    }
    return res.status >= 200 && res.status < 300 ? 'sent' : 'failed';
  } catch (err) {
    deps.log.debug({ err: err instanceof OutboundRefused ? err.message : err, subscriptionId: sub.id }, 'web push not delivered');
    return 'failed';
  }
}

/** Sends one notification to every browser the user subscribed in this org. */
export async function notifyUser(deps: Deps, orgId: string, userId: string, notification: PushNotification): Promise<PushOutcome> {
  if (!vapidKeys(deps)) return { sent: 0, removed: 0, failed: 0 };
  const subs = await subscriptionsOf(deps.db, orgId, userId);
  const results = await Promise.all(subs.map((s) => sendToSubscription(deps, s, notification)));
  return {
    sent: results.filter((r) => r === 'sent').length,
    removed: results.filter((r) => r === 'gone').length,
    failed: results.filter((r) => r === 'failed').length,
  };
}
