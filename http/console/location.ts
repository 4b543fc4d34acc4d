import { fileURLToPath } from 'node:url';

/**
 * Where the built console lives: beside the module that serves it, so the build script and the node agree on
 * one folder whatever the working directory. Built by `npm run build:console` (also run by `npm install` and
 * `npm start`), never committed.
 */
export const consoleDistDir = fileURLToPath(new URL('./dist/', import.meta.url));

/** The folder of the page's own sources. */
export const consoleSourceDir = fileURLToPath(new URL('./app/', import.meta.url));

/** What the build writes beside the assets: each served file with its type and encodings. */
export const MANIFEST = 'manifest.json';

export interface ConsoleManifest {
  readonly builtAt: string;
  readonly files: readonly ManifestEntry[];
}

export interface ManifestEntry {
  /** The URL path it is served at, e.g. `/assets/main-5XK2.js`. */
  readonly path: string;
  /** The file in the dist folder holding its uncompressed bytes. */
  readonly file: string;
  readonly contentType: string;
  /** Hashed names never change content, so browsers may keep them; the page and the worker must be re-checked. */
  readonly immutable: boolean;
  /** Precompressed siblings (`<file>.br`, `<file>.gz`). */
  readonly encodings: readonly ('br' | 'gzip')[];
}
