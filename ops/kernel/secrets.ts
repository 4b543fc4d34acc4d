import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * The master key encrypts secrets at rest (AES-256-GCM) and derives every signing key, so rotating it is a
 * deliberate operation. On embedded defaults it is generated once into the data dir with mode 0600.
 */
export class Secrets {
  private constructor(private readonly masterKey: Buffer) {}

  static fromBase64(masterKeyBase64: string): Secrets {
    const key = Buffer.from(masterKeyBase64, 'base64');
    if (key.length !== 32) throw new Error('TROUPE_MASTER_KEY must decode to 32 bytes');
    return new Secrets(key);
  }

  /** A stable 32-byte key for one purpose ("jwt-ed25519-seed", "cookie", …); different purposes never collide. */
  derive(purpose: string, length = 32): Buffer {
    return Buffer.from(hkdfSync('sha256', this.masterKey, Buffer.alloc(0), `troupe:${purpose}`, length));
  }

  /** Encrypts with a fresh nonce; `context` (for example `orgId:kind`) is bound as associated data. */
  seal(plaintext: string, context: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.derive('at-rest'), nonce);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `v1.${Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** Throws when the ciphertext was tampered with or sealed for another context. */
  open(sealed: string, context: string): string {
    if (!sealed.startsWith('v1.')) throw new Error('unknown sealed-secret format');
    const raw = Buffer.from(sealed.slice(3), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.derive('at-rest'), raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}
