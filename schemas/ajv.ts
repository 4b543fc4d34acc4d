import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import nextVocabularyModule from 'ajv/dist/vocabularies/next.js';

/**
 * Unknown keywords and formats are errors (a typo in a schema must not silently accept everything); the checks that
 * reject common, correct schemas (a `required` name without a `properties` entry, a `properties` without `type`) are
 * off so that schemas stay short.
 */
const options = { allErrors: false, strict: true, strictRequired: false, strictTypes: false, strictTuples: false, allowUnionTypes: true } as const;

/**
 * The one Ajv instance for request bodies, replies, messages and snapshots. Compiling once and sharing the instance
 * keeps `$id`-referenced schemas resolvable from each other. `allErrors` stays off: with hostile input it lets one
 * request make the validator walk every element of a large array, and the first failure is enough to answer 400.
 */
export const ajv = new Ajv(options);

/**
 * Query strings arrive as strings; this instance coerces them (`"50"` → 50) so a query schema can say
 * `{type: 'integer', maximum: 100}`. It validates a throwaway object, never the handler's URLSearchParams.
 */
export const queryAjv = new Ajv({ ...options, coerceTypes: true });

// ajv-formats is CommonJS: under NodeNext (and Node) its default import is the module's `exports`, the plugin its `default`.
const addFormats = addFormatsModule.default;
addFormats(ajv);
addFormats(queryAjv);

/**
 * `dependentRequired`, `dependentSchemas`, `minContains`/`maxContains`: the 2019-09 keywords that replaced draft-07's
 * `dependencies`. OpenAPI 3.1 documents are JSON Schema 2020-12, which has no `dependencies`, so schemas that both
 * validate requests and appear in `GET /api/openapi.json` use these (the default Ajv class leaves them out).
 */
const nextVocabulary = nextVocabularyModule.default;
ajv.addVocabulary(nextVocabulary);
queryAjv.addVocabulary(nextVocabulary);

/** Compiles a schema once per instance, reusing an earlier compilation of the same `$id`. */
export function compileSchema(instance: Ajv, schema: Record<string, unknown>) {
  const id = typeof schema.$id === 'string' ? schema.$id : undefined;
  const existing = id === undefined ? undefined : instance.getSchema(id);
  return existing ?? instance.compile(schema);
}

/** What `compileOnFirstUse` returns: called like a compiled validator, with the last call's `errors`. */
export interface LazyValidate {
  (data: unknown): boolean;
  readonly errors: ErrorObject[] | null | undefined;
}

/**
 * A validator compiled on its first call rather than when its module loads. Compiling costs milliseconds per
 * schema (tens for a large one), and a node that loads every module at start paid them all before it was ready
 * though most schemas guard routes or messages a given run may never see (decision 0051). A schema that does not
 * compile still fails loudly, on first use; the unit suites exercise every one.
 */
export function compileOnFirstUse(instance: Ajv, schema: Record<string, unknown>): LazyValidate {
  let compiled: ReturnType<typeof compileSchema> | undefined;
  const validate = ((data: unknown) => (compiled ??= compileSchema(instance, schema))(data)) as LazyValidate;
  Object.defineProperty(validate, 'errors', { get: () => compiled?.errors });
  return validate;
}

/** Names the field an error is about, as a dotted path (`owner.email`); '' for the document itself. */
export function fieldOf(error: ErrorObject): string {
  const segments = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const missing = error.keyword === 'required' ? (error.params as { missingProperty?: string }).missingProperty : undefined;
  const extra = error.keyword === 'additionalProperties' ? (error.params as { additionalProperty?: string }).additionalProperty : undefined;
  if (missing !== undefined) segments.push(missing);
  if (extra !== undefined) segments.push(extra);
  return segments.join('.');
}
