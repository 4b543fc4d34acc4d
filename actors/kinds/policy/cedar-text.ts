import * as cedar from '../../services/cedar/engine.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { cedarSchemaText } from '../../../schemas/cedar/index.js';

/**
 * Cedar text as stored policies carry it: checked on write (syntax, then strict validation against
 * `schemas/cedar/troupe.cedarschema`), and rewritten for enforcement so every statement carries an id that names
 * its stored policy and version. Decisions then explain themselves: `determiningPolicies` lists
 * `org.policy/<policyId>/v<version>#<n>` for a stored statement, or the default policy's own `@id`.
 */

export interface CedarProblem {
  readonly message: string;
  readonly help?: string;
  /** Where in the submitted text, when Cedar says: 0-based offset, 1-based line and column. */
  readonly offset?: number;
  readonly line?: number;
  readonly column?: number;
}

/** Throws VALIDATION_FAILED (400) naming Cedar's message and position; returns the number of statements. */
export function assertValidCedar(text: string, field = 'cedarPolicy'): number {
  const problem = cedarProblem(text);
  if (problem) {
    const where = problem.line === undefined ? '' : ` at line ${problem.line}, column ${problem.column}`;
    throw new TroupeError('VALIDATION_FAILED', `${field}: ${problem.message}${where}`, { field, cedar: { ...problem } });
  }
  const parts = cedar.policySetTextToParts(text);
  return parts.type === 'success' ? parts.policies.length : 0;
}

/** The first problem with `text` as a stored policy, or undefined when it parses and validates. */
export function cedarProblem(text: string): CedarProblem | undefined {
  const parsed = cedar.checkParsePolicySet({ staticPolicies: text });
  if (parsed.type === 'failure') return problemOf(text, parsed.errors[0]);
  const parts = cedar.policySetTextToParts(text);
  if (parts.type === 'failure') return problemOf(text, parts.errors[0]);
  if (parts.policies.length === 0) return { message: 'contains no Cedar policy' };
  if (parts.policy_templates.length > 0) return { message: 'policy templates are not supported; write static policies' };
  const answer = cedar.validate({
    schema: cedarSchemaText(), policies: { staticPolicies: text }, validationSettings: { mode: 'strict' },
  });
  if (answer.type === 'failure') return problemOf(text, answer.errors[0]);
  const first = answer.validationErrors[0];
  if (first) return problemOf(text, first.error);
  return undefined;
}

function problemOf(text: string, error: cedar.DetailedError | undefined): CedarProblem {
  if (!error) return { message: 'is not valid Cedar' };
  const location = error.sourceLocations?.[0];
  const base: CedarProblem = error.help ? { message: error.message, help: error.help } : { message: error.message };
  if (!location) return base;
  const { line, column } = lineAndColumn(text, location.start);
  return { ...base, offset: location.start, line, column };
}

/** Cedar offsets count bytes of UTF-8; lines and columns are counted in characters for people. */
function lineAndColumn(text: string, byteOffset: number): { line: number; column: number } {
  const prefix = Buffer.from(text, 'utf8').subarray(0, byteOffset).toString('utf8');
  const lines = prefix.split('\n');
  return { line: lines.length, column: (lines[lines.length - 1]?.length ?? 0) + 1 };
}

/** The id a stored statement carries in decisions; the authorizer adds its own `org.` prefix. */
export const statementId = (policyId: string, version: number, index: number): string => `policy/${policyId}/v${version}#${index}`;

/**
 * Rewrites stored policies into one Cedar text in which each statement's `@id` names its stored policy, version
 * and position (any `@id` the author wrote is replaced, so authors cannot impersonate a default policy's id).
 * The rewrite is textual, on Cedar's own split of the set: a JSON round trip would pass integer literals through
 * JavaScript numbers and change them. A statement that cannot be re-annotated, or a stored text that no longer
 * parses (it was validated on write, so only a Cedar upgrade could cause this), becomes a forbid-all under its
 * id: enforcement fails closed and the decision names the culprit.
 */
export function enforcementText(policies: ReadonlyArray<{ id: string; version: number; cedarPolicy: string }>): string {
  const out: string[] = [];
  for (const p of policies) {
    const parts = cedar.policySetTextToParts(p.cedarPolicy);
    if (parts.type === 'failure' || parts.policy_templates.length > 0) {
      out.push(forbidAll(statementId(p.id, p.version, 0)));
      continue;
    }
    parts.policies.forEach((statement, index) => {
      const id = statementId(p.id, p.version, index);
      out.push(reannotate(statement, id) ?? forbidAll(id));
    });
  }
  return out.join('\n\n');
}

const forbidAll = (id: string): string => `@id("${id}")\nforbid (principal, action, resource);`;
const leadingAnnotation = /^\s*(?:\/\/[^\n]*\n\s*)*@([A-Za-z_][A-Za-z0-9_]*)(?:\s*\(\s*"(?:[^"\\]|\\.)*"\s*\))?/;

/** The statement with its own `@id` (if any) replaced by `id`; undefined when the result is not one policy. */
function reannotate(statement: string, id: string): string | undefined {
  let rest = statement;
  const kept: string[] = [];
  for (let m = leadingAnnotation.exec(rest); m !== null; m = leadingAnnotation.exec(rest)) {
    if (m[1] !== 'id') kept.push(m[0].trim());
    rest = rest.slice(m[0].length);
  }
  const text = [`@id("${id}")`, ...kept, rest.trimStart()].join('\n');
  const check = cedar.policySetTextToParts(text);
  if (check.type === 'failure' || check.policies.length !== 1 || check.policy_templates.length > 0) return undefined;
  return text;
}
