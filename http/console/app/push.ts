import { get, post } from './api.js';
import type { WebPushPublicKey, WebPushSubscription } from './api-types.js';

/**
 * Browser notifications through the node's web push: the page registers the service worker (`/sw.js`), asks
 * permission, subscribes with the node's VAPID key and hands the subscription to
 * `POST /api/notifications/web-push/subscribe`. The node then pushes a notification when a gate opens that the
 * person may decide.
 */
export type PushState = 'unsupported' | 'unconfigured' | 'denied' | 'off' | 'on';

export function pushSupported(): boolean {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

export async function registerWorker(): Promise<ServiceWorkerRegistration> {
  await navigator.serviceWorker.register('/sw.js', { scope: '/' });
  return navigator.serviceWorker.ready;
}

export async function pushState(): Promise<PushState> {
  if (!pushSupported()) return 'unsupported';
  const { publicKey } = await get<WebPushPublicKey>('/api/notifications/web-push/public-key');
  if (publicKey === null) return 'unconfigured';
  if (Notification.permission === 'denied') return 'denied';
  const registration = await navigator.serviceWorker.getRegistration('/');
  const subscription = await registration?.pushManager.getSubscription();
  return subscription ? 'on' : 'off';
}

export async function turnOn(): Promise<PushState> {
  const { publicKey } = await get<WebPushPublicKey>('/api/notifications/web-push/public-key');
  if (publicKey === null) return 'unconfigured';
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') return permission === 'denied' ? 'denied' : 'off';
  const registration = await registerWorker();
  const subscription = await registration.pushManager.getSubscription()
    ?? await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64UrlToBytes(publicKey) });
  // The DOM types every member of a subscription's JSON as optional; a push subscription always has both.
  const json = subscription.toJSON() as Pick<WebPushSubscription, 'endpoint' | 'keys'>;
  await post('/api/notifications/web-push/subscribe', { endpoint: json.endpoint, keys: json.keys } satisfies WebPushSubscription);
  return 'on';
}

export async function turnOff(): Promise<PushState> {
  const registration = await navigator.serviceWorker.getRegistration('/');
  const subscription = await registration?.pushManager.getSubscription();
  if (subscription) {
    await fetch('/api/notifications/web-push/subscribe', {
      method: 'DELETE', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: subscription.endpoint }),
    });
    await subscription.unsubscribe();
  }
  return 'off';
}

function base64UrlToBytes(text: string): Uint8Array<ArrayBuffer> {
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(text.length / 4) * 4, '=');
  const binary = atob(base64);
  const bytes = new Uint8Array(new ArrayBuffer(binary.length));
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
