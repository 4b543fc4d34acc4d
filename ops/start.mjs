// `npm start`: checks that build/ is current (rebuilding it when a source is newer) and runs the compiled node in
// this same process. The check used to be a `prestart` script, a node process of its own before the server's: one
// more interpreter start (about 0.1 s, more where NODE_EXTRA_CA_CERTS makes every node read a CA bundle) on every
// start (decision 0051). `npm start` execs this, so SIGTERM sent to `npm start` still reaches the server (0043).
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureBuildCurrent } from './build-state.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
if (!ensureBuildCurrent(root)) process.exit(1);
await import(pathToFileURL(path.join(root, 'build/ops/main.js')).href);
