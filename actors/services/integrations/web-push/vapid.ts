// web-push is imported where it is used: most nodes never send a push, and loading it cost every start (decision 0051).
import type { Deps } from '../../deps.js';
import { insertVapidRowOnce, readVapidRow } from '../../../../storage/integrations/web-push.js';

/**
 * The VAPID key pair (RFC 8292) that signs every push this deployment sends. Generated once, on first use, by
 * whichever node gets there first; the private key is sealed with the master key and every node reads the same
 * pair back. Web push is off (public key null) unless `TROUPE_WEB_PUSH_SUBJECT` names a contact, which push
 * services require in the VAPID token.
 */

export interface VapidKeys {
  readonly subject: string;
  /** base64url of the uncompressed P-256 point, as browsers take it for `applicationServerKey`. */
  readonly publicKey: string;
  readonly privateKey: string;
}

const SEAL_CONTEXT = 'web-push:vapid';

/** The node's VAPID key pair, read (or made) on first use and kept; a failed read is tried again next time. */
export class VapidKeyStore {
  private loaded: Promise<VapidKeys> | undefined;

  constructor(private readonly deps: Pick<Deps, 'config' | 'db' | 'secrets' | 'clock'>) {}

  /** Undefined when web push is off on this deployment. */
  keys(): Promise<VapidKeys> | undefined {
    const subject = this.deps.config.webPushSubject;
    if (subject === undefined) return undefined;
    if (!this.loaded) {
      const loading = loadOrCreate(this.deps, subject);
      this.loaded = loading;
      loading.catch(() => { if (this.loaded === loading) this.loaded = undefined; });
    }
    return this.loaded;
  }
}

/** The deployment's VAPID keys (`deps.services.vapid`); undefined when web push is off. */
export const vapidKeys = (deps: Pick<Deps, 'services'>): Promise<VapidKeys> | undefined => deps.services.vapid.keys();

async function loadOrCreate(deps: Pick<Deps, 'db' | 'secrets' | 'clock'>, subject: string): Promise<VapidKeys> {
  let row = await readVapidRow(deps.db);
  if (!row) {
    const { default: webpush } = await import('web-push');
    const fresh = webpush.generateVAPIDKeys();
    await insertVapidRowOnce(deps.db, fresh.publicKey, deps.secrets.seal(fresh.privateKey, SEAL_CONTEXT), new Date(deps.clock.now()));
    row = await readVapidRow(deps.db);
    if (!row) throw new Error('VAPID key pair was not stored');
  }
  return { subject, publicKey: row.publicKey, privateKey: deps.secrets.open(row.sealedPrivateKey, SEAL_CONTEXT) };
}
