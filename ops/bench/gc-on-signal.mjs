// Preloaded into benchmark servers started with --expose-gc: SIGUSR2 runs a full collection, so a memory reading
// taken right after counts live objects, not whatever garbage the previous round left behind. With
// BENCH_MEMORY_FILE set, the process's own view of its memory after that collection is written there as JSON.
import { writeFileSync } from 'node:fs';

process.on('SIGUSR2', () => {
  globalThis.gc?.();
  const file = process.env.BENCH_MEMORY_FILE;
  if (file) writeFileSync(file, JSON.stringify(process.memoryUsage()));
});
