// The one way into the Cedar engine: the V8 flags must be set before Cedar's module is instantiated and its calls optimised.
import '../../ops/kernel/wasm-inlining-off.js';
import '../../ops/kernel/wasm-tier-up-later.js';

export * from '@cedar-policy/cedar-wasm/nodejs';
