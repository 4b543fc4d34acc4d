import path from 'node:path';

/**
 * The path of `parts` under `root`, resolved, and refused (thrown) unless it lies strictly inside `root`: a part
 * such as `..`, `../x` or an absolute path can never make the worker write, delete or run anything elsewhere. The
 * second line of defence behind the id formats (server-ids.ts): a file name that passed a check somewhere else is
 * still checked where it becomes a path. Symbolic links are not followed: only the worker creates what is in its
 * dirs, and the server cannot make one.
 */
export class OutsideDirError extends Error {}

export function insideDir(root: string, ...parts: string[]): string {
  const base = path.resolve(root);
  const target = path.resolve(base, ...parts);
  const rel = path.relative(base, target);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel) || parts.some((p) => p.includes('\0'))) {
    throw new OutsideDirError(`refusing a path outside ${base}: ${JSON.stringify(parts.join('/')).slice(0, 200)}`);
  }
  return target;
}
