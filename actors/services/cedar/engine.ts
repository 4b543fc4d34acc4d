// The one way into the Cedar engine: the V8 flags must be set before Cedar's module is instantiated and its calls optimised.
import '../../../ops/kernel/wasm-inlining-off.js';
import '../../../ops/kernel/wasm-tier-up-later.js';
import { createRequire } from 'node:module';
import type * as Wasm from '@cedar-policy/cedar-wasm/nodejs';

export type * from '@cedar-policy/cedar-wasm/nodejs';

/*
 * The engine is instantiated by its first call, not when this module loads: its 4 MB WebAssembly module, the code
 * compiled for it and the schema and policies parsed into its memory are resident for the rest of the process, and
 * an idle node that has authorised nothing does not need them (decision 0057, G10). A synchronous require (the
 * package's CommonJS build), so every function below keeps Cedar's synchronous signature.
 */
let wasm: typeof Wasm | undefined;
const engine = (): typeof Wasm => (wasm ??= createRequire(import.meta.url)('@cedar-policy/cedar-wasm/nodejs') as typeof Wasm);

export const checkParsePolicySet: typeof Wasm.checkParsePolicySet = (policies) => engine().checkParsePolicySet(policies);
export const isAuthorized: typeof Wasm.isAuthorized = (call) => engine().isAuthorized(call);
export const policySetTextToParts: typeof Wasm.policySetTextToParts = (text) => engine().policySetTextToParts(text);
export const policyToJson: typeof Wasm.policyToJson = (policy) => engine().policyToJson(policy);
export const preparsePolicySet: typeof Wasm.preparsePolicySet = (id, policies) => engine().preparsePolicySet(id, policies);
export const preparseSchema: typeof Wasm.preparseSchema = (name, schema) => engine().preparseSchema(name, schema);
export const statefulIsAuthorized: typeof Wasm.statefulIsAuthorized = (call) => engine().statefulIsAuthorized(call);
export const validate: typeof Wasm.validate = (call) => engine().validate(call);
