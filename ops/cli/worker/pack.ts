// `npm run pack:worker`: the worker as its own package (issue 31). Bundles `troupe-worker` (ops/cli/worker/standalone.ts
// and what it imports) into one ES module with esbuild, writes a package.json with no dependencies, and packs it with
// `npm pack` into the repository root as troupe-worker-<version>.tgz, whose path it prints.
// Install it with `npm install -g ./troupe-worker-<version>.tgz` (or `--prefix <dir>`): the command is `troupe-worker`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export async function packWorker(outDir = root): Promise<string> {
  const { version, engines } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string; engines: Record<string, string> };
  const staging = mkdtempSync(path.join(os.tmpdir(), 'troupe-worker-pack-'));
  try {
    await build({
      entryPoints: [path.join(root, 'ops/cli/worker/bin.ts')],
      outfile: path.join(staging, 'bin.mjs'),
      bundle: true, platform: 'node', format: 'esm', target: 'node20', minify: false, legalComments: 'inline',
      // A young generation of 2 MB per semi-space, as `troupe` gives a long-lived worker (ops/cli/bin.js).
      banner: { js: "#!/usr/bin/env -S node --max-semi-space-size=2\nimport { createRequire as troupeCreateRequire } from 'node:module';\nconst require = troupeCreateRequire(import.meta.url);" },
      // `troupe-worker --version` answers the version it was packed as.
      define: { 'process.env.TROUPE_WORKER_VERSION': JSON.stringify(version) },
      logLevel: 'warning',
    });
    writeFileSync(path.join(staging, 'package.json'), `${JSON.stringify({
      name: 'troupe-worker', version, description: 'Troupe worker: runs the agent sessions of your projects on this machine',
      type: 'module', bin: { 'troupe-worker': 'bin.mjs' }, engines, license: 'UNLICENSED', files: ['bin.mjs', 'README.md'],
    }, null, 2)}\n`);
    copyFileSync(path.join(root, 'ops/cli/worker/PACKAGE-README.md'), path.join(staging, 'README.md'));
    const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', outDir], { cwd: staging, encoding: 'utf8' }).trim().split('\n').pop()!;
    return path.join(outDir, packed);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(await packWorker());
}
