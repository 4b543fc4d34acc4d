import { TroupeError } from '../../../ops/kernel/errors.js';

/**
 * The `when` language of condition nodes, deliberately tiny so a definition cannot run code: a literal
 * (`true`, `false`), a path (`input.ready`, truthy test, `!` negates), or a path compared with a JSON literal
 * (`input.env == "prod"`, `steps.review.decision != "rejected"`). Paths read the run's input and its steps.
 */
export type Expression =
  | { readonly kind: 'literal'; readonly value: boolean }
  | { readonly kind: 'truthy'; readonly path: readonly string[]; readonly negate: boolean }
  | { readonly kind: 'compare'; readonly path: readonly string[]; readonly op: '==' | '!='; readonly value: unknown };

const PATH = /^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*){0,7}$/;

export function parseExpression(text: string): Expression {
  const trimmed = text.trim();
  if (trimmed === 'true' || trimmed === 'false') return { kind: 'literal', value: trimmed === 'true' };
  const compare = /^(\S+)\s*(==|!=)\s*(.+)$/.exec(trimmed);
  if (compare) {
    const [, path = '', op = '==', literal = ''] = compare;
    if (!PATH.test(path)) throw bad(text);
    let value: unknown;
    try { value = JSON.parse(literal); } catch { throw bad(text); }
    if (typeof value === 'object' && value !== null) throw bad(text);
    return { kind: 'compare', path: path.split('.'), op: op as '==' | '!=', value };
  }
  const negate = trimmed.startsWith('!');
  const path = negate ? trimmed.slice(1).trim() : trimmed;
  if (!PATH.test(path)) throw bad(text);
  return { kind: 'truthy', path: path.split('.'), negate };
}

export function evaluate(expression: Expression, scope: Readonly<Record<string, unknown>>): boolean {
  switch (expression.kind) {
    case 'literal': return expression.value;
    case 'truthy': return Boolean(lookup(scope, expression.path)) !== expression.negate;
    case 'compare': {
      const equal = lookup(scope, expression.path) === expression.value;
      return expression.op === '==' ? equal : !equal;
    }
  }
}

function lookup(scope: Readonly<Record<string, unknown>>, path: readonly string[]): unknown {
  let value: unknown = scope;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

const bad = (text: string) => new TroupeError('VALIDATION_FAILED', `condition '${text.slice(0, 100)}' is not a valid expression`);
