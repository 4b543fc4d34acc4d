// Microbenchmark: what one Cedar decision costs on a request path, evaluated through the WASM boundary (a new org
// each time, so nothing is memoised) and memoised (the same role, action and resource attributes again).
// A figure, not a goal: PERFORMANCE.md has none for it, but it bounds every authorised route.
//   npx tsx ops/bench/authorizer.ts [--decisions 5000]
import { parseArgs } from 'node:util';
import { createAuthorizer } from '../../actors/services/identity/authorizer.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { printTable } from './harness.js';

const { values } = parseArgs({ options: { decisions: { type: 'string', default: '5000' } } });
const decisions = Number(values.decisions);
const PROJECT = '33333333-3333-4333-8333-333333333333';

const authorizer = createAuthorizer({ projectRoleOf: async () => undefined });
const member = (orgId: string): Principal => ({ kind: 'user', userId: 'u-member', orgId, orgRole: 'member', via: 'token' });
const workflowIn = (orgId: string) => ({ type: 'Workflow', id: 'wf-1', orgId, projectId: PROJECT });
const orgs = Array.from({ length: decisions * 2 }, (_, i) => `org-${i}`);

async function microsPerDecision(orgOf: (i: number) => string, from: number): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = from; i < from + decisions; i++) {
    const orgId = orgOf(i);
    const result = await authorizer.check(member(orgId), 'edit', workflowIn(orgId));
    if (!result.allowed) throw new Error('a member was refused an edit in their own org');
  }
  return Number(process.hrtime.bigint() - started) / 1000 / decisions;
}

await microsPerDecision((i) => orgs[i]!, decisions); // warm the JIT and the WASM module on orgs the runs never reuse
const evaluated = await microsPerDecision((i) => orgs[i]!, 0);
const memoised = await microsPerDecision(() => orgs[0]!, 0);
printTable([
  { measure: 'evaluated through WASM, µs/decision', value: evaluated },
  { measure: 'memoised, µs/decision', value: memoised },
]);
await authorizer.close();
