import type { ApiError } from '../../api.js';
import type { ServerProblem } from './yaml-editor.js';

/**
 * The definition problems in a refusal: a VALIDATION_FAILED whose `details.field` points into the definition
 * (`definitionYaml…`) is marked on its line in the editor; any other refusal is only shown above it.
 */
export function problemsOf(error: ApiError): ServerProblem[] {
  const field = error.details?.field;
  if (error.code !== 'VALIDATION_FAILED' || typeof field !== 'string' || !/^definitionYaml(\.|$)/.test(field)) return [];
  return [{ field, message: error.message }];
}
