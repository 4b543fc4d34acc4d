/**
 * The console's service worker: shows the node's push messages as notifications (a gate waiting on the person,
 * a session that ended) and opens the console where they point when clicked. It caches nothing: the console is
 * only useful connected to its node.
 */
// The console's one tsconfig types `self` as a page's Window; this file runs as the service worker, whose scope it is.
const worker = self as unknown as ServiceWorkerGlobalScope;

interface PushPayload { title?: string; body?: string; tag?: string; url?: string }

worker.addEventListener('install', () => { void worker.skipWaiting(); });
worker.addEventListener('activate', (event) => { event.waitUntil(worker.clients.claim()); });

worker.addEventListener('push', (event) => {
  let payload: PushPayload = {};
  try {
    payload = (event.data?.json() ?? {}) as PushPayload;
  } catch {
    payload = { body: event.data?.text() ?? '' };
  }
  const url = typeof payload.url === 'string' && payload.url.startsWith('/') ? payload.url : urlFor(payload.tag);
  event.waitUntil(worker.registration.showNotification(payload.title ?? 'Troupe', {
    body: payload.body ?? '',
    ...(payload.tag ? { tag: payload.tag } : {}),
    icon: '/assets/icon.svg',
    data: { url },
  }));
});

worker.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = (event.notification.data as { url?: string } | null)?.url ?? '/';
  event.waitUntil((async () => {
    const windows = await worker.clients.matchAll({ type: 'window', includeUncontrolled: true });
    const open = windows.find((w) => new URL(w.url).origin === worker.location.origin);
    if (open) {
      await open.focus();
      await open.navigate(url);
    } else {
      await worker.clients.openWindow(url);
    }
  })());
});

/** Gate notifications are tagged `approval-gate:<id>`, session ones `session:<id>` (actors/services/integrations/web-push). */
function urlFor(tag: string | undefined): string {
  if (tag?.startsWith('approval-gate:')) return '/approvals';
  if (tag?.startsWith('session:')) return `/sessions/${encodeURIComponent(tag.slice('session:'.length))}`;
  return '/';
}
