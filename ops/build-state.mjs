// Whether build/ (the compiled server and CLI, `npm run build`) is at least as new as every source it is made
// from. Shared by `npm start` (ops/start.mjs rebuilds when it is not), ops/build-current.mjs and the `troupe` executable
// (ops/cli/bin.js runs the compiled CLI when it is, and the TypeScript sources through tsx otherwise).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const sourceRooms = ['actors', 'transport', 'http', 'storage', 'schemas', 'ops'];
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

function builtAt(root) {
  try {
    return statSync(join(root, 'build/.built')).mtimeMs;
  } catch {
    return 0;
  }
}

/** True when `root`/build was made after the last change to any source (and to package-lock.json). */
export function buildIsCurrent(root = '.') {
  const sources = Math.max(...sourceRooms.map((room) => newestSourceMtime(join(root, room))), statSync(join(root, 'package-lock.json')).mtimeMs);
  return sources <= builtAt(root);
}

/**
 * Rebuilds `root`/build (`npm run build`) when a source is newer; returns false when that build failed. Rebuilding
 * on every start would cost seconds (tsc alone takes two even when nothing changed), so an unchanged tree goes
 * straight on.
 */
export function ensureBuildCurrent(root = '.') {
  if (buildIsCurrent(root)) return true;
  process.stderr.write('troupe: sources changed since the last build; building (npm run build)\n');
  return spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' }).status === 0;
}
