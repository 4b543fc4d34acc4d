// The worker package's executable (bundled by pack.ts): `troupe-worker …`, the same as `troupe worker …`.
import { runWorkerCli } from './standalone.js';

process.exitCode = await runWorkerCli(process.argv);
