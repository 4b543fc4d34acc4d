import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, basename, resolve } from 'node:path';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { build, type BuildOptions, type Metafile } from 'esbuild';
import { consoleSourceDir, MANIFEST, type ConsoleManifest, type ManifestEntry } from './location.js';

/**
 * Builds the console into `outDir`: the page's script and style (bundled, minified, content-hashed), the service
 * worker at a fixed name (its URL is its identity), the icon and the HTML shell that names them. Every text file
 * is also written brotli- and gzip-compressed, so the node serves bytes without compressing per request.
 * See ops/decisions/0030-console.md.
 */
export async function buildConsole(outDir: string): Promise<ConsoleManifest> {
  await rm(outDir, { recursive: true, force: true });
  await mkdir(join(outDir, 'assets'), { recursive: true });
  const common: BuildOptions = {
    bundle: true, minify: true, sourcemap: false, legalComments: 'none', target: ['chrome109', 'firefox115', 'safari16'],
    jsx: 'automatic', jsxImportSource: 'preact', logLevel: 'warning', write: false,
  };
  // Splitting: a page imported with `import()` (the workflow editor and builder, with CodeMirror and the graph layout)
  // becomes chunks of its own, fetched when first opened, so the first load does not carry them (decision 0089).
  const page = await build({
    ...common, entryPoints: { main: join(consoleSourceDir, 'main.tsx') }, format: 'esm', outdir: join(outDir, 'assets'),
    entryNames: '[name]-[hash]', chunkNames: 'chunk-[hash]', assetNames: '[name]-[hash]', metafile: true, splitting: true,
  });
  // The shell names the main entry's own script and stylesheet; the script fetches its chunks itself (the pages loaded
  // with `import()` are entry points of the metafile too, hence the match on the main entry's path).
  const mainEntry = resolve(consoleSourceDir, 'main.tsx');
  const entryOutputs = new Set(Object.entries(page.metafile?.outputs ?? {})
    .filter(([, o]) => o.entryPoint !== undefined && resolve(o.entryPoint) === mainEntry)
    .flatMap(([path, o]) => [basename(path), ...(o.cssBundle ? [basename(o.cssBundle)] : [])]));
  const preloads = staticImportsOf(page.metafile?.outputs ?? {}, mainEntry);
  const worker = await build({ ...common, entryPoints: { sw: join(consoleSourceDir, 'service-worker.ts') }, format: 'iife', outdir: outDir });

  const files: ManifestEntry[] = [];
  const emit = async (path: string, file: string, bytes: Uint8Array | string, immutable: boolean) => {
    const data = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : Buffer.from(bytes);
    await writeFile(join(outDir, file), data);
    await writeFile(join(outDir, `${file}.br`), brotliCompressSync(data, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: data.length } }));
    await writeFile(join(outDir, `${file}.gz`), gzipSync(data, { level: 9 }));
    files.push({ path, file, contentType: contentTypeOf(file), immutable, encodings: ['br', 'gzip'] });
  };

  let script: string | undefined;
  let style: string | undefined;
  for (const out of page.outputFiles ?? []) {
    const name = basename(out.path);
    await emit(`/assets/${name}`, `assets/${name}`, out.contents, true);
    if (!entryOutputs.has(name)) continue;
    if (name.endsWith('.js')) script = `/assets/${name}`;
    if (name.endsWith('.css')) style = `/assets/${name}`;
  }
  if (script === undefined || style === undefined) throw new Error('the console build produced no script or no style');
  for (const out of worker.outputFiles ?? []) await emit('/sw.js', 'sw.js', out.contents, false);
  await emit('/assets/icon.svg', 'assets/icon.svg', ICON, false);
  await emit('/index.html', 'index.html', shell(script, style, preloads), false);

  const manifest: ConsoleManifest = { builtAt: new Date().toISOString(), files };
  await writeFile(join(outDir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

function contentTypeOf(file: string): string {
  if (file.endsWith('.js')) return 'text/javascript; charset=utf-8';
  if (file.endsWith('.css')) return 'text/css; charset=utf-8';
  if (file.endsWith('.html')) return 'text/html; charset=utf-8';
  if (file.endsWith('.svg')) return 'image/svg+xml';
  throw new Error(`the console build emitted a file of unknown type: ${file}`);
}

/**
 * The chunks the main entry imports statically, however deep: the browser learns of each only after parsing the one
 * importing it, so without a hint each level is another round trip before the console can start.
 */
function staticImportsOf(outputs: Metafile['outputs'], mainEntry: string): string[] {
  const main = Object.keys(outputs).find((path) => { const entry = outputs[path]!.entryPoint; return entry !== undefined && resolve(entry) === mainEntry; });
  const found = new Set<string>();
  const visit = (path: string) => {
    for (const imported of outputs[path]?.imports ?? []) {
      if (imported.kind !== 'import-statement' || found.has(imported.path)) continue;
      found.add(imported.path);
      visit(imported.path);
    }
  };
  if (main !== undefined) visit(main);
  return [...found].map((path) => `/assets/${basename(path)}`);
}

/** The page shell: no inline script or style, so the Content-Security-Policy can forbid both. */
function shell(script: string, style: string, preloads: readonly string[]): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Troupe console</title>
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${style}">
${preloads.map((chunk) => `<link rel="modulepreload" href="${chunk}">\n`).join('')}<script type="module" src="${script}"></script>
</head>
<body>
<div id="app"><noscript>The Troupe console needs JavaScript. The API is at /api/openapi.json.</noscript></div>
</body>
</html>
`;
}

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#3b3f8f"/><path d="M8 10h16v3h-6.5v12h-3V13H8z" fill="#fff"/></svg>
`;
