import type { NodeProcess } from './processes.js';

/** A JSON call to a node process of the multi-node tests: status and parsed body (the text when it is not JSON). */
export async function callNode(
  node: NodeProcess, method: string, path: string, init: { body?: unknown; token?: string } = {}, timeoutMs = 15_000,
): Promise<{ status: number; json: any }> {
  const res = await fetch(`${node.url}${path}`, {
    method,
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let json: any;
  try { json = JSON.parse(text); } catch { json = text; }
  return { status: res.status, json };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `probe` answers true within `withinMs`; a probe that throws (a node starting or gone) is asked again. */
export async function waitFor(what: string, withinMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try { if (await probe()) return; } catch { /* a node may be starting or gone: ask again */ }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await sleep(200);
  }
}
