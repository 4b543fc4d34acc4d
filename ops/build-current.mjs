#!/usr/bin/env node
// `npm start` runs compiled JavaScript from build/. Rebuilding on every start would cost seconds (tsc alone takes
// two even when nothing changed), so this compares modification times and rebuilds only when a source is newer
// than the last build: a start after `npm install` or after no edits goes straight to node.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const sourceRooms = ['actors', 'transport', 'http', 'storage', 'schemas', 'ops'];
const stampFile = 'build/.built';
const skippedDirs = new Set(['node_modules', 'dist', 'bench', 'decisions']);

function newestSourceMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!skippedDirs.has(entry.name)) newest = Math.max(newest, newestSourceMtime(join(dir, entry.name)));
    } else {
      newest = Math.max(newest, statSync(join(dir, entry.name)).mtimeMs);
    }
  }
  return newest;
}

function builtAt() {
  try {
    return statSync(stampFile).mtimeMs;
  } catch {
    return 0;
  }
}

const sources = Math.max(...sourceRooms.map(newestSourceMtime), statSync('package-lock.json').mtimeMs);
if (sources > builtAt()) {
  process.stderr.write('troupe: sources changed since the last build; building (npm run build)\n');
  const result = spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
