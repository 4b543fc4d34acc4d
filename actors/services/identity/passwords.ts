import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { TroupeError } from '../../../ops/kernel/errors.js';

/**
 * Password hashes: scrypt with a per-user 16-byte salt, stored as `scrypt$N$r$p$salt$hash` (base64url parts) so the
 * cost can be raised later without invalidating existing hashes. N = 2^15 costs ~50 ms and 32 MiB per check, which
 * bounds online guessing without making login slow.
 */
const COST = { N: 32768, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const MAX_MEMORY = 64 * 1024 * 1024;

/**
 * Password checks (sign-ins) run one at a time per process, the rest wait in a short line (issue 30): each takes
 * ~50 ms of a core, and unauthenticated guessers from many addresses otherwise kept every libuv thread hashing, on a two-core
 * machine starving the event loop that serves everyone else. Past the line a check is refused with 503 and
 * Retry-After; a person signing in meets it only during such an attack.
 */
const HASHING_AT_ONCE = 1;
const HASHING_QUEUE = 16;
let hashing = 0;
const waiting: Array<() => void> = [];

async function withHashingSlot<T>(work: () => Promise<T>): Promise<T> {
  if (hashing >= HASHING_AT_ONCE) {
    if (waiting.length >= HASHING_QUEUE) throw new TroupeError('OVERLOADED', 'too many sign-ins are being checked; retry shortly');
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else {
    hashing += 1;
  }
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else hashing -= 1;
  }
}

function scrypt(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(password.normalize('NFKC'), salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LENGTH, { ...COST, maxmem: MAX_MEMORY });
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/**
 * A hash of a password nobody knows, with the current cost. Login verifies against it when the email is unknown
 * or has no password, so "no such user" and "wrong password" take the same time.
 */
let decoy: Promise<string> | undefined;
export const decoyPasswordHash = (): Promise<string> => (decoy ??= hashPassword(randomBytes(24).toString('base64')));

/** False for a wrong password or a stored value that is not one of our hashes; never throws for bad input. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltText, keyText] = parts as [string, string, string, string, string, string];
  const N = Number(n);
  const rr = Number(r);
  const pp = Number(p);
  if (![N, rr, pp].every((v) => Number.isSafeInteger(v) && v > 0) || N > 1 << 20 || rr > 32 || pp > 16) return false;
  const expected = Buffer.from(keyText, 'base64url');
  if (expected.length < 16) return false;
  // Only checks take the slot: they are what an unauthenticated caller can ask for; hashing is done for provisioning.
  const actual = await withHashingSlot(() => scrypt(password, Buffer.from(saltText, 'base64url'), expected.length, {
    N, r: rr, p: pp, maxmem: Math.max(MAX_MEMORY, 256 * N * rr),
  }));
  return timingSafeEqual(actual, expected);
}
