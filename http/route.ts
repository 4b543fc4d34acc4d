import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import type { Deps } from '../actors/services/deps.js';
import type { HttpRequest, Reply, Route, RouteAuthorization, RouteCall } from './types.js';

/**
 * The body type a route's JSON Schema admits (decision 0047): the schema that validates the body is the one
 * declaration, and the handler's `req.body` is typed from it, so no cast can drift from what ajv lets through.
 * Schemas must be `as const` (json-schema-to-ts reads the literal).
 */
export type BodyOf<S> = S extends JSONSchema ? (JSONSchema extends S ? unknown : FromSchema<S>) : unknown;

export interface RouteSpec<S, Found> extends Omit<Route<Deps>, 'bodySchema' | 'authorize' | 'handler'> {
  readonly bodySchema?: S;
  readonly authorize?: RouteAuthorization<Deps, BodyOf<S>, Found>;
  handler(req: HttpRequest<BodyOf<S>>, deps: Deps, call: RouteCall<Found>): Reply | Promise<Reply>;
}

/**
 * Declares a node route with its body typed from `bodySchema` and `found` typed from `authorize.find`. A plain
 * identity at run time: it exists for the types.
 */
export function route<const S extends (JSONSchema & Record<string, unknown>) | undefined = undefined, Found = undefined>(spec: RouteSpec<S, Found>): Route<Deps> {
  return spec;
}
