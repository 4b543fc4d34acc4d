import { createRequire } from 'node:module';
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

/** Loads one named binary from the package, or throws naming the platform and ABI. Never the JS fallback. */
export function loadNativeUws(name: string): UwsModule {
  const require = createRequire(import.meta.url);
  try {
    return require(`uWebSockets.js/binaries/${name}`) as UwsModule;
  } catch (cause) {
    throw new Error(
      `uWebSockets.js has no working native binary for platform=${process.platform} arch=${process.arch} ` +
        `node ABI=${process.versions.modules} (node ${process.version}); expected binaries/${name}. ` +
        `Refusing to start on the slow JavaScript fallback: use a Node version whose ABI the installed ` +
        `uWebSockets.js ships (see node_modules/uWebSockets.js/binaries).`,
      { cause },
    );
  }
}
