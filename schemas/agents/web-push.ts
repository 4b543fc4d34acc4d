/** Wire shapes of web push (spec 2.7 web-push subscription, 4.7 subscribe, 4.8 public key). */
const base64url = (min: number, max: number) => ({ type: 'string', minLength: min, maxLength: max, pattern: '^[A-Za-z0-9_-]+={0,2}$' }) as const;
const endpoint = { type: 'string', format: 'uri', maxLength: 2048, pattern: '^https?://' } as const;

export const subscribeBody = {
  type: 'object', additionalProperties: false, required: ['endpoint', 'keys'],
  properties: {
    endpoint,
    // Browsers also send expirationTime; it is accepted and not stored.
    expirationTime: { type: ['number', 'null'] },
    keys: {
      type: 'object', additionalProperties: false, required: ['p256dh', 'auth'],
      properties: { p256dh: base64url(80, 100), auth: base64url(16, 32) },
    },
  },
} as const;

export const unsubscribeBody = { type: 'object', additionalProperties: false, required: ['endpoint'], properties: { endpoint } } as const;
export const subscribeReply = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } as const;
export const publicKeyReply = { type: 'object', required: ['publicKey'], properties: { publicKey: { type: ['string', 'null'] } } } as const;
export const unsubscribeReply = { type: 'object', required: ['removed'], properties: { removed: { type: 'boolean' } } } as const;

/** How a test notification went: browsers reached, subscriptions removed because the browser dropped them, failures. */
export const testSendReply = {
  type: 'object', required: ['sent', 'removed', 'failed'],
  properties: { sent: { type: 'integer' }, removed: { type: 'integer' }, failed: { type: 'integer' } },
} as const;

export const testSendBody = {
  type: 'object', additionalProperties: false,
  properties: { title: { type: 'string', minLength: 1, maxLength: 200 }, body: { type: 'string', maxLength: 1000 } },
} as const;
