import { createDecipheriv, hkdfSync, type ECDH } from 'node:crypto';

/**
 * What a browser's push service does with a web-push message (RFC 8291, aes128gcm): decrypts it with the
 * subscription's private key and auth secret, so a test on loopback reads what the person would see.
 */
export interface Browser { ecdh: ECDH; auth: Buffer; path: string }
export interface Notification { title: string; body?: string; tag?: string; url?: string }

export function decryptPush(body: Buffer, b: Browser): Notification {
  const salt = body.subarray(0, 16);
  const idlen = body[20]!;
  const asPublic = body.subarray(21, 21 + idlen);
  const ciphertext = body.subarray(21 + idlen);
  const ikm = Buffer.from(hkdfSync('sha256', b.ecdh.computeSecret(asPublic), b.auth, Buffer.concat([Buffer.from('WebPush: info\0'), b.ecdh.getPublicKey(), asPublic]), 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  return JSON.parse(padded.subarray(0, end).toString('utf8')) as Notification;
}

