import { createECDH, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import { decryptPush, type Browser, type Notification } from '../../support/web-push.js';

/**
 * A push service on loopback for a real Chromium. Chromium's own push transport talks only to its vendor's
 * service, which a test must not reach, so `PushManager.subscribe` is given this service's endpoint and keys the
 * test holds (an init script, before the page's own code runs). Everything else is real: the page's opt-in code,
 * the node encrypting and sending to the endpoint, and the service worker's push handler, which receives the
 * decrypted payload through the DevTools protocol exactly as the browser's transport would hand it over.
 */
export class PushBridge {
  readonly received: Notification[] = [];
  /** Pushes that could not be handed to the service worker. */
  readonly errors: string[] = [];
  /** Pushes handed over again because the worker did not show the first (see `deliver`). */
  redelivered = 0;
  private readonly keys: Browser;
  private server: http.Server | undefined;
  private cdp: CDPSession | undefined;
  private registrationId: string | undefined;
  private readonly activated = new Set<string>();
  private origin = '';

  private constructor() {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    this.keys = { ecdh, auth: randomBytes(16), path: '/push/console' };
  }

  static async start(): Promise<PushBridge> {
    const bridge = new PushBridge();
    bridge.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.writeHead(201).end();
        bridge.deliver(Buffer.concat(chunks)).catch((err: unknown) => bridge.errors.push(String(err)));
      });
    });
    await new Promise<void>((resolve) => bridge.server!.listen(0, '127.0.0.1', resolve));
    return bridge;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}${this.keys.path}`;
  }

  /** Installs the subscription in every page of the context and follows the service worker's registration. */
  async attach(context: BrowserContext, page: Page, origin: string): Promise<void> {
    this.origin = origin;
    const subscription = {
      endpoint: this.endpoint,
      keys: { p256dh: this.keys.ecdh.getPublicKey().toString('base64url'), auth: this.keys.auth.toString('base64url') },
    };
    await context.addInitScript(`(() => {
      const json = ${JSON.stringify(subscription)};
      let subscribed = false;
      const subscription = { endpoint: json.endpoint, toJSON: () => json, unsubscribe: async () => { subscribed = false; return true; } };
      PushManager.prototype.subscribe = async function () { subscribed = true; return subscription; };
      PushManager.prototype.getSubscription = async function () { return subscribed ? subscription : null; };
    })();`);
    this.cdp = await context.newCDPSession(page);
    this.cdp.on('ServiceWorker.workerRegistrationUpdated', (event: { registrations: { registrationId: string; scopeURL: string; isDeleted: boolean }[] }) => {
      for (const r of event.registrations) if (r.scopeURL === `${origin}/` && !r.isDeleted) this.registrationId = r.registrationId;
    });
    this.cdp.on('ServiceWorker.workerVersionUpdated', (event: { versions: { registrationId: string; status: string }[] }) => {
      for (const v of event.versions) if (v.status === 'activated') this.activated.add(v.registrationId);
    });
    await this.cdp.send('ServiceWorker.enable');
  }

  /**
   * `navigator.serviceWorker.ready` can resolve while the worker is still activating, and a push handed over through
   * the DevTools protocol before it is activated is dropped without an error (seen as 1 run in 3 without a
   * notification). A browser's push transport holds a message for an activated worker, so the bridge waits for one.
   */
  private async activatedRegistration(): Promise<string> {
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      const id = this.registrationId;
      if (id !== undefined && this.activated.has(id)) return id;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error('a push arrived and no service worker was activated within 10 s');
  }

  private async deliver(body: Buffer): Promise<void> {
    const notification = decryptPush(body, this.keys);
    this.received.push(notification);
    if (this.cdp === undefined || this.registrationId === undefined) throw new Error('a push arrived before the service worker registered');
    const registrationId = await this.activatedRegistration();
    // A push service redelivers what the browser did not take. Chromium drops a message handed over through the
    // DevTools protocol now and then (about 1 run in 4 here, with no error and no push event in the worker), so the
    // bridge does too: until the worker shows the notification, at most five times.
    for (let attempt = 1; attempt <= 5; attempt++) {
      await this.cdp.send('ServiceWorker.deliverPushMessage', { origin: this.origin, registrationId, data: JSON.stringify(notification) });
      if (await this.shown(notification, 3_000)) return;
      this.redelivered++;
    }
    throw new Error(`the service worker showed no notification after ${this.redelivered} redeliveries`);
  }

  /** Whether the page's service worker registration lists a notification with this body within `ms`. */
  private async shown(notification: Notification, ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    const expression = `navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((list) => list.some((n) => n.body === ${JSON.stringify(notification.body ?? '')}))`;
    while (Date.now() < until) {
      const { result } = await this.cdp!.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true }) as { result: { value?: unknown } };
      if (result.value === true) return true;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return false;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
