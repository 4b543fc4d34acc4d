import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MANIFEST, type ConsoleManifest } from './location.js';

/** One served file, held in memory in each encoding the build wrote. */
export interface ConsoleAsset {
  readonly contentType: string;
  readonly immutable: boolean;
  readonly identity: Buffer;
  readonly br: Buffer | undefined;
  readonly gzip: Buffer | undefined;
}

export interface ConsoleAssets {
  /** By URL path (`/index.html`, `/sw.js`, `/assets/…`). */
  readonly files: ReadonlyMap<string, ConsoleAsset>;
  /** Why there is nothing to serve, when the build has not run. */
  readonly missing?: string;
}

/**
 * Reads a built console into memory once, at start: a few hundred kilobytes, served without touching the disk. A
 * node started without a build still starts (the API is what workers and scripts need); `/` then says how to build.
 */
export function loadConsoleAssets(dir: string): ConsoleAssets {
  const manifestFile = join(dir, MANIFEST);
  if (!existsSync(manifestFile)) return { files: new Map(), missing: 'the console is not built: run `npm run build:console`, then restart the node' };
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as ConsoleManifest;
  const files = new Map<string, ConsoleAsset>();
  for (const entry of manifest.files) {
    const read = (suffix: string) => readFileSync(join(dir, `${entry.file}${suffix}`));
    files.set(entry.path, {
      contentType: entry.contentType,
      immutable: entry.immutable,
      identity: read(''),
      br: entry.encodings.includes('br') ? read('.br') : undefined,
      gzip: entry.encodings.includes('gzip') ? read('.gz') : undefined,
    });
  }
  return { files };
}

/** The best encoding the client accepts (`br`, then `gzip`), by the Accept-Encoding header's tokens. */
export function pickEncoding(asset: ConsoleAsset, acceptEncoding: string | undefined): { body: Buffer; encoding: 'br' | 'gzip' | undefined } {
  const accepted = new Set((acceptEncoding ?? '').split(',').map((t) => t.split(';')[0]!.trim().toLowerCase()).filter((t) => t !== ''));
  if (asset.br && accepted.has('br')) return { body: asset.br, encoding: 'br' };
  if (asset.gzip && accepted.has('gzip')) return { body: asset.gzip, encoding: 'gzip' };
  return { body: asset.identity, encoding: undefined };
}
