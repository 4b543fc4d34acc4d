// Invariant: the typed client (the generated types and the hand-written wrapper) compiles on its own under
// `tsc --strict` and the stricter flags a consumer may turn on, whatever the project's tsconfig says; and the
// compiler, not a 400 at run time, rejects a call that omits a required body or names a path the API lacks.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const clientEntry = path.join(root, 'http/client/index.ts');

const strictOptions: ts.CompilerOptions = {
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  noImplicitOverride: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
  types: [],
  skipLibCheck: true,
};

function diagnosticsOf(files: string[]): string[] {
  const program = ts.createProgram(files, strictOptions);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `${path.relative(root, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}` : '';
    return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

describe('the typed client under tsc --strict', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => { dir = mkdtempSync(path.join(root, 'test', '.client-strict-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('compiles with no diagnostic, and refuses calls the document does not allow', () => {
    const usage = path.join(dir, 'usage.ts');
    const entry = path.relative(dir, clientEntry).replace(/\.ts$/, '.js');
    writeFileSync(usage, `
      import { createTroupeClient, unwrap, TroupeApiError } from '${entry}';
      const api = createTroupeClient({ baseUrl: 'http://127.0.0.1:8080', token: () => 'token' });
      export async function poll(): Promise<string[]> {
        const { sessions } = await unwrap(api.POST('/api/daemon/poll', { body: { workerId: 'w', capacity: 1 } }));
        return sessions.map((s) => s.prompt);
      }
      export async function refused(): Promise<void> {
        // @ts-expect-error the poll body is required
        await api.POST('/api/daemon/poll', {});
        // @ts-expect-error no such path
        await api.GET('/api/no-such-route');
        // @ts-expect-error capacity is an integer, not a string
        await api.POST('/api/daemon/poll', { body: { workerId: 'w', capacity: '1' } });
      }
      export const isCode = (e: unknown): boolean => e instanceof TroupeApiError && e.code === 'NOT_FOUND';
    `);
    expect(diagnosticsOf([clientEntry, usage])).to.deep.equal([]);
  });
});
