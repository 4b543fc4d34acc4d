import sinon from 'sinon';
import { runCli } from '../../ops/cli/main.js';

/**
 * Runs the `troupe` CLI in this process and captures what it prints. `TROUPE_TOKEN` is cleared unless `env` sets it,
 * so a developer's own token never decides a test; `env` values apply for this run only (undefined unsets one).
 */
export async function runCliCaptured(args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const saved = Object.fromEntries(['TROUPE_TOKEN', ...Object.keys(env)].map((k) => [k, process.env[k]]));
  const apply = (values: Record<string, string | undefined>): void => {
    for (const [k, v] of Object.entries(values)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  };
  apply({ TROUPE_TOKEN: undefined, ...env });
  const o = sinon.stub(process.stdout, 'write').callsFake((chunk: string | Uint8Array) => { out += String(chunk); return true; });
  const e = sinon.stub(process.stderr, 'write').callsFake((chunk: string | Uint8Array) => { err += String(chunk); return true; });
  try {
    return { code: await runCli(['node', 'troupe', ...args]), out, err };
  } finally {
    o.restore();
    e.restore();
    apply(saved);
  }
}
