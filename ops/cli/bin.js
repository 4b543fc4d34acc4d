#!/usr/bin/env -S node --max-semi-space-size=2
// (Run as `npx troupe` or directly, node gets a young generation of at most 2 MB per semi-space: V8's default grows to
// 16 MB after a burst of requests and keeps it, about 30 MB of resident memory a long-lived, mostly idle
// `troupe worker` would carry for nothing; short commands do not notice. `node ops/cli/bin.js` skips the line.)
// The `troupe` executable. When build/ is current (`npm install` and `npm start` make it), it runs the compiled CLI:
// a long-running `troupe worker` then carries no TypeScript loader (about 35 MB less resident memory, decision 0023).
// Otherwise (sources edited since the last build) it loads the TypeScript sources through tsx, so what runs is
// always what is in the tree.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildIsCurrent } from '../build-state.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let runCli;
if (buildIsCurrent(root)) {
  ({ runCli } = await import(pathToFileURL(path.join(root, 'build/ops/cli/main.js')).href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ runCli } = await import('./main.ts'));
}
process.exitCode = await runCli(process.argv);
