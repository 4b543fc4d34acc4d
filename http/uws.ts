import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as Uws from 'uWebSockets.js';

export type { HttpRequest as UwsRequest, HttpResponse as UwsResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';

/**
 * The native uWebSockets.js module, loaded directly.
 *
 * The package's own entry point (`src/uws.js`) silently swaps in a slow pure-JavaScript server when the native
 * binary does not load, or when UWS_USE_FALLBACK is set. A node that quietly runs at a fraction of its capacity is
 * worse than one that refuses to start, so this loader never touches that entry point: it requires the binary for
 * exactly this platform, architecture and Node ABI, and throws an error naming them when it cannot.
 */
export type UwsModule = typeof Uws;

let loaded: UwsModule | undefined;

export function binaryName(platform = process.platform, arch = process.arch, abi = process.versions.modules): string {
  return `uws_${platform}_${arch}_${abi}.node`;
}

export function loadUws(): UwsModule {
  loaded ??= loadNativeUws(binaryName());
  return loaded;
}

/**
 * Loads one named binary, or throws naming the platform and ABI; never the JS fallback. The package's own binaries
 * come first; for the Node versions it has none for (22 and 24), the ones built from the same source beside this
 * file (`uws-native/`, decision 0067, BUILD.md there says how to verify them).
 */
export function loadNativeUws(name: string): UwsModule {
  const require = createRequire(import.meta.url);
  const candidates = [`uWebSockets.js/binaries/${name}`, fileURLToPath(new URL(`./uws-native/${name}`, import.meta.url))];
  const causes: unknown[] = [];
  for (const candidate of candidates) {
    if (candidate.startsWith('/') && !existsSync(candidate)) continue;
    try {
      return require(candidate) as UwsModule;
    } catch (cause) {
      causes.push(cause);
    }
  }
  throw new Error(
    `uWebSockets.js has no working native binary for platform=${process.platform} arch=${process.arch} ` +
      `node ABI=${process.versions.modules} (node ${process.version}); expected ${name} in the package's binaries/ ` +
      `or in http/uws-native/. Refusing to start on the slow JavaScript fallback: use Node 24, 22 or 20.`,
    { cause: causes.length === 1 ? causes[0] : new AggregateError(causes) },
  );
}
