import { consoleDistDir } from './location.js';
import { buildConsole } from './bundle.js';

/** `npm run build:console`: writes the console into its dist folder and says what it wrote. */
const started = performance.now();
const manifest = await buildConsole(consoleDistDir);
const ms = Math.round(performance.now() - started);
process.stdout.write(`console built: ${manifest.files.length} files in ${ms} ms (${consoleDistDir})\n`);
