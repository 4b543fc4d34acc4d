import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Reads `<dataDir>/<name>`, creating it with `generate()` and mode 0600 when absent. Returns the value and
 * whether it was created, so the caller can log where it is (never what it is).
 */
export function loadOrCreateSecretFile(dataDir: string, name: string, generate: () => string): { value: string; file: string; created: boolean } {
  const file = path.resolve(dataDir, name);
  if (existsSync(file)) return { value: readFileSync(file, 'utf8').trim(), file, created: false };
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const value = generate();
  writeFileSync(file, `${value}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return { value, file, created: true };
}

export const generateMasterKey = (): string => randomBytes(32).toString('base64');
export const generateAdminToken = (): string => `trpadm_${randomBytes(32).toString('base64url')}`;
