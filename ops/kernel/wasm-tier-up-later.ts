import { setFlagsFromString } from 'node:v8';

/*
 * V8 runs WebAssembly first as quickly compiled baseline code and recompiles a function with its optimising compiler
 * once the function has run for its "tiering budget" (about 1.8 MB of code executed by default). At start a node
 * runs a lot of Wasm exactly once: Cedar parses its schema and default policies, PGlite boots Postgres. With the
 * default budget those one-off parser and boot functions crossed it and were optimised, for nothing: about 1 s of
 * CPU on compiler threads in a real-engine start and 1.7 s in an embedded one, against 1.7 s and 2.7 s for the
 * rest of the start (decision 0051). A budget 55 times larger leaves one-off code at baseline and still optimises
 * what stays hot (an authorisation evaluated over and over, a query executor) after a short while.
 * Both Wasm engines import this before their bindings, like wasm-inlining-off (decision 0016).
 */
setFlagsFromString('--wasm-tiering-budget=100000000');
