import { ajv, compileSchema } from './ajv.js';

/**
 * The OpenAPI 3.1 document, built from the route table so it cannot drift from what the server serves.
 * Routes are described structurally (the fields of `http/types.ts` Route that matter here), keeping schemas/ free of
 * imports from the rooms that use it.
 */
export interface DocumentedRoute {
  readonly method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  readonly path: string;
  readonly auth: 'none' | 'admin' | 'org' | 'human' | 'runtime' | 'any';
  readonly summary: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly bodyKind?: 'json' | 'form' | 'raw' | 'none';
  readonly bodySchema?: Record<string, unknown>;
  readonly querySchema?: Record<string, unknown>;
  readonly responseSchema?: Record<string, unknown>;
  readonly responseContentType?: string;
  readonly successStatus?: number;
  readonly deprecated?: boolean;
  readonly sse?: boolean;
  /** Per-credential rate limit (decisions 0026, 0082); writes default to 'write'. */
  readonly rateLimit?: 'write' | 'dispatch' | 'workerOutput' | 'workerHeartbeat' | 'workerPoll' | 'none';
  readonly sseEvents?: Readonly<Record<string, { readonly schemaName: string; readonly schema: Record<string, unknown> }>>;
  /** Replies that do not use the `{error, code}` shape (e.g. OAuth's RFC 6749 errors), by status. */
  readonly errorResponses?: Readonly<Record<string, { readonly description: string; readonly schema: Record<string, unknown> }>>;
}

export interface OpenApiOptions {
  readonly title?: string;
  readonly version?: string;
  /** The codes an error body may carry (the keys of `ops/kernel/errors.ts` errorRegistry). */
  readonly errorCodes?: readonly string[];
  /**
   * Where the API is reached. Default: `/`, which OpenAPI resolves against the URL the document was fetched from,
   * so the document a node serves names that node without knowing the address it is reached at.
   */
  readonly servers?: readonly { readonly url: string; readonly description?: string }[];
}

/** `{error, code, details?}`: the body of every 4xx and 5xx reply. */
export function errorSchema(errorCodes?: readonly string[]): Record<string, unknown> {
  return {
    type: 'object',
    required: ['error', 'code'],
    properties: {
      error: { type: 'string', description: 'Human-readable message; never a stack trace.' },
      code: errorCodes && errorCodes.length > 0 ? { type: 'string', enum: [...errorCodes] } : { type: 'string', pattern: '^[A-Z][A-Z0-9_]*$' },
      details: { type: 'object', description: 'Machine-readable detail, e.g. the field a validation error is about.' },
    },
  };
}

const securitySchemes = {
  adminToken: { type: 'http', scheme: 'bearer', description: 'The platform admin token (TROUPE_ADMIN_TOKEN).' },
  userToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A user token (typ: user).' },
  sessionCookie: { type: 'apiKey', in: 'cookie', name: 'troupe_session', description: 'The browser session.' },
  apiKey: { type: 'http', scheme: 'bearer', description: 'An org API key (trp_…).' },
  machineToken: { type: 'http', scheme: 'bearer', description: 'An OAuth client-credentials access token.' },
  runtimeJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A worker runtime token (typ: runtime).' },
} as const;

type SchemeName = keyof typeof securitySchemes;
const orgSchemes: SchemeName[] = ['userToken', 'sessionCookie', 'apiKey', 'machineToken'];
const schemesByAuth: Record<DocumentedRoute['auth'], SchemeName[]> = {
  none: [],
  admin: ['adminToken'],
  org: orgSchemes,
  human: ['userToken', 'sessionCookie'],
  runtime: ['runtimeJwt'],
  any: [...orgSchemes, 'runtimeJwt'],
};

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

export function buildOpenApi(routes: readonly DocumentedRoute[], options: OpenApiOptions = {}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: Record<string, unknown> = { Error: errorSchema(options.errorCodes) };
  for (const route of routes) {
    const path = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    (paths[path] ??= {})[route.method] = operation(route, path);
    for (const { schemaName, schema } of Object.values(route.sseEvents ?? {})) {
      if (schemaName in schemas && JSON.stringify(schemas[schemaName]) !== JSON.stringify(schema)) {
        throw new Error(`two different schemas are named ${schemaName} (${route.method} ${route.path})`);
      }
      schemas[schemaName] = schema;
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: options.title ?? 'Troupe', version: options.version ?? '0.1.0' },
    servers: (options.servers ?? [{ url: '/', description: 'The node that served this document' }]).map((server) => ({ ...server })),
    paths,
    components: { schemas, securitySchemes },
  };
}

function operation(route: DocumentedRoute, path: string): Record<string, unknown> {
  const bodyKind = route.bodyKind ?? (route.method === 'post' || route.method === 'put' || route.method === 'patch' ? 'json' : 'none');
  const op: Record<string, unknown> = {
    operationId: `${route.method}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: route.tags ? [...route.tags] : [],
    security: schemesByAuth[route.auth].map((name) => ({ [name]: [] })),
  };
  if (route.deprecated) op.deprecated = true;

  const parameters: unknown[] = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  const query = route.querySchema;
  const queryProps = (query?.properties ?? {}) as Record<string, unknown>;
  const queryRequired = new Set((query?.required ?? []) as string[]);
  for (const [name, schema] of Object.entries(queryProps)) parameters.push({ name, in: 'query', required: queryRequired.has(name), schema });
  if (route.sse) parameters.push({ name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' }, description: 'Resume after this event.' });
  if (parameters.length > 0) op.parameters = parameters;

  if (bodyKind !== 'none') op.requestBody = requestBody(bodyKind, route.bodySchema);

  const status = String(route.successStatus ?? 200);
  const success = route.sse
    ? eventStreamResponse(route.sseEvents)
    : { description: route.summary, content: { [route.responseContentType ?? 'application/json']: { schema: route.responseSchema ?? {} } } };
  const responses: Record<string, unknown> = { [status]: success };
  if (bodyKind !== 'none' || route.querySchema) responses['400'] = errorResponse('Malformed or invalid request');
  if (route.auth !== 'none') {
    responses['401'] = errorResponse('Missing or invalid credentials');
    responses['403'] = errorResponse('Authenticated but not allowed');
  }
  if (bodyKind !== 'none') responses['413'] = errorResponse('Body larger than the route accepts');
  if (bodyKind === 'json' || bodyKind === 'form') responses['415'] = errorResponse('Unsupported content type');
  const limited = route.rateLimit !== 'none' && route.method !== 'get' && route.auth !== 'none' && route.auth !== 'admin';
  if (route.rateLimit === 'workerOutput') responses['429'] = rateLimited('Too many bytes of agent output from this worker this minute');
  else if (route.rateLimit === 'workerHeartbeat') responses['429'] = rateLimited('Too many heartbeats from this worker this minute');
  else if (route.rateLimit === 'workerPoll') responses['429'] = rateLimited('Too many polls from this worker this minute');
  else if (route.auth === 'runtime' && limited) responses['429'] = rateLimited('Too many reports from this worker this minute');
  else if (limited) responses['429'] = rateLimited(`Too many ${route.rateLimit === 'dispatch' ? 'dispatches' : 'writes'} from this credential`);
  else if (route.sse && route.auth !== 'none' && route.auth !== 'admin') responses['429'] = rateLimited("The caller's org holds as many event streams on this node as it may (TOO_MANY_STREAMS)");
  responses['4XX'] = errorResponse('Client error');
  responses['5XX'] = errorResponse('Server or dependency error');
  for (const [code, custom] of Object.entries(route.errorResponses ?? {})) {
    responses[code] = { description: custom.description, content: { 'application/json': { schema: custom.schema } } };
  }
  op.responses = responses;
  return op;
}

/**
 * The server reads an empty JSON or form body as `{}` (http/body.ts), so an operation needs a body exactly when
 * `{}` fails its schema: then the body is `required: true`, and a generated client makes the caller pass one.
 */
function bodyIsRequired(schema: Record<string, unknown> | undefined): boolean {
  if (schema === undefined) return false;
  return !compileSchema(ajv, schema)({});
}

/** A 429 reply: `{error, code: RATE_LIMITED}` with the seconds to wait in Retry-After. */
function rateLimited(description: string): Record<string, unknown> {
  return {
    ...errorResponse(description),
    headers: { 'Retry-After': { description: 'Seconds until the credential may try again', schema: { type: 'integer', minimum: 1 } } },
  };
}

/**
 * OpenAPI 3.1 cannot type the events of a stream (3.2's `itemSchema` will), so the event names and their data
 * schemas are listed in the description and in `x-sse-events`, each data schema a component of its own.
 */
function eventStreamResponse(events: DocumentedRoute['sseEvents']): Record<string, unknown> {
  const entries = Object.entries(events ?? {});
  const named = entries.map(([event, { schemaName }]) => `\`${event}\` (data: ${schemaName})`).join(', ');
  return {
    description: entries.length > 0 ? `An event stream of ${named}` : 'An event stream',
    content: {
      'text/event-stream': {
        schema: { type: 'string' },
        ...(entries.length > 0
          ? { 'x-sse-events': Object.fromEntries(entries.map(([event, { schemaName }]) => [event, { $ref: `#/components/schemas/${schemaName}` }])) }
          : {}),
      },
    },
  };
}

function requestBody(kind: 'json' | 'form' | 'raw', schema: Record<string, unknown> | undefined): Record<string, unknown> {
  const body = schema ?? { type: 'object' };
  const required = bodyIsRequired(schema);
  switch (kind) {
    case 'json':
      return { required, content: { 'application/json': { schema: body } } };
    case 'form':
      return { required, content: { 'application/x-www-form-urlencoded': { schema: body }, 'application/json': { schema: body } } };
    case 'raw':
      return { required: true, content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } };
  }
}
