/**
 * Headers of every console response. The policy allows only this origin for scripts, styles, images, the service
 * worker and API calls: no inline script or style, no other host, no framing. The page and the service worker are
 * revalidated on every load; hashed assets are immutable.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function consoleHeaders(immutable: boolean, encoding: 'br' | 'gzip' | undefined): Record<string, string> {
  return {
    'content-security-policy': CONTENT_SECURITY_POLICY,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
    'x-frame-options': 'DENY',
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    vary: 'accept-encoding',
    ...(encoding === undefined ? {} : { 'content-encoding': encoding }),
  };
}
