/**
 * The rooms' import rules (ops/decisions/0032-rooms-enforced.md), checked by `npm run rooms` as the first test step.
 * Each rule names the arrow it forbids; the decision's rule table and this list are compared by
 * test/unit/rooms/rules.test.ts, so neither changes without the other.
 */
const rooms = '^(actors|transport|http|storage|schemas)/';

module.exports = {
  forbidden: [
    {
      name: 'storage-not-actors-http',
      comment: 'storage holds tables and read models; the domain and the edge stand on it, never the reverse',
      severity: 'error',
      from: { path: '^storage/' },
      to: { path: '^(actors|http)/' },
    },
    {
      name: 'actors-not-http',
      comment: 'the domain knows nothing of the HTTP edge that calls it',
      severity: 'error',
      from: { path: '^actors/' },
      to: { path: '^http/' },
    },
    {
      name: 'transport-not-actors-http-storage',
      comment: 'the transport moves envelopes; it knows no actor, handler or table',
      severity: 'error',
      from: { path: '^transport/' },
      to: { path: '^(actors|http|storage)/' },
    },
    {
      name: 'schemas-are-leaves',
      comment: 'schemas and the records beside them import nothing of the project, not even ops/kernel',
      severity: 'error',
      from: { path: '^schemas/' },
      to: { path: '^(actors|transport|http|storage|ops|test)/' },
    },
    {
      name: 'kernel-is-ground',
      comment: 'ops/kernel imports no room and nothing else of ops/',
      severity: 'error',
      from: { path: '^ops/kernel/' },
      to: { path: '^(actors|transport|http|storage|schemas|test)/|^ops/(?!kernel/)' },
    },
    {
      name: 'rooms-not-ops',
      comment: 'a room may import ops/kernel, never the composition root, the CLI, config or benches',
      severity: 'error',
      from: { path: rooms },
      to: { path: '^ops/(?!kernel/)' },
    },
    {
      name: 'code-not-tests',
      comment: 'no shipped module imports the test suite',
      severity: 'error',
      from: { path: '^(actors|transport|http|storage|schemas|ops)/' },
      to: { path: '^test/' },
    },
    {
      name: 'nact-only-in-runtime',
      comment: 'actors/runtime/ is the only code that imports nact',
      severity: 'error',
      from: { path: '^(actors|transport|http|storage|schemas|ops)/', pathNot: '^actors/runtime/' },
      to: { path: 'node_modules/nact/' },
    },
    {
      name: 'runtime-is-ground',
      comment: 'the actor runtime knows no kind and no service: kinds are registered with it, never imported by it',
      severity: 'error',
      from: { path: '^actors/runtime/' },
      to: { path: '^actors/(?!runtime/)' },
    },
    {
      name: 'cli-through-the-client',
      comment: 'the CLI and the worker talk to a node only through the typed client; `troupe migrate` loads ops/migrate.ts',
      severity: 'error',
      from: { path: '^ops/cli/' },
      to: { path: '^(actors|transport|storage)/|^http/(?!client/)' },
    },
    {
      name: 'no-value-cycles',
      comment: 'no module reaches itself again through value imports (type-only imports erase at build time)',
      severity: 'error',
      from: { path: '^(actors|transport|http|storage|schemas|ops)/' },
      to: { circular: true, dependencyTypesNot: ['type-only'], viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: a type arrow couples rooms as much as a value arrow does.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
