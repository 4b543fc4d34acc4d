// The one way into the Cedar engine: the V8 flag must be set before Cedar's JS→Wasm calls get optimised.
import '../../ops/kernel/wasm-inlining-off.js';

export * from '@cedar-policy/cedar-wasm/nodejs';
