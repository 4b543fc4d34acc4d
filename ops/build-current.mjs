#!/usr/bin/env node
// `npm start` runs compiled JavaScript from build/. Rebuilding on every start would cost seconds (tsc alone takes
// two even when nothing changed), so this compares modification times and rebuilds only when a source is newer
// than the last build: a start after `npm install` or after no edits goes straight to node.
import { spawnSync } from 'node:child_process';
import { buildIsCurrent } from './build-state.mjs';

if (!buildIsCurrent()) {
  process.stderr.write('troupe: sources changed since the last build; building (npm run build)\n');
  const result = spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
