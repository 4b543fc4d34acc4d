import { setFlagsFromString } from 'node:v8';

/*
 * Node 20's V8 inlines JS→Wasm calls into optimised callers, and a lazy deoptimisation that lands inside such an
 * inlined call aborts the whole process ("Fatal error … unreachable code" in
 * Deoptimizer::DoComputeBuiltinContinuation). A hot Cedar authorisation loop hit it in half of its runs; with
 * inlining off, none of sixteen did. Both Wasm engines the node runs (Cedar, PGlite) import this module before
 * their bindings, so the flag is set before any of their calls can be optimised. The cost is one ordinary call
 * per crossing, within noise of the authorisation benchmark (ops/bench/authorizer.ts).
 */
setFlagsFromString('--no-turbo-inline-js-wasm-calls');
