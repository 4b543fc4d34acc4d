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
  private readonly keys: Browser;
  private server: http.Server | undefined;
  private cdp: CDPSession | undefined;
  private registrationId: string | undefined;
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
    await this.cdp.send('ServiceWorker.enable');
  }

  private async deliver(body: Buffer): Promise<void> {
    const notification = decryptPush(body, this.keys);
    this.received.push(notification);
    if (this.cdp === undefined || this.registrationId === undefined) throw new Error('a push arrived before the service worker registered');
    await this.cdp.send('ServiceWorker.deliverPushMessage', { origin: this.origin, registrationId: this.registrationId, data: JSON.stringify(notification) });
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
