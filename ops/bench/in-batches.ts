/** Runs `work(0..count-1)` at most `width` at a time, answering the results in index order. */
export async function inBatches<T>(count: number, width: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) { const i = next++; out[i] = await work(i); }
  }));
  return out;
}
