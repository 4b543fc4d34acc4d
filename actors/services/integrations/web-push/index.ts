export { vapidKeys, type VapidKeys } from './vapid.js';
export { notifyUser, sendToSubscription, type PushNotification, type PushOutcome } from './send.js';
