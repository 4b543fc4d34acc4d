// The suite of the analytics route tests (analytics*.routes.test.ts): a node per file and engine set, with the
// anonymity floor they check and two provisioned orgs.
import type { Knex } from 'knex';
import { engineSets, startTestNode, type EngineSet, type TestNode } from '../../support/node.js';
import { provisionOrg, type Org } from '../sessions/support.js';

export const DAY = 86_400_000;
export const FLOOR = 3;

/** What a test reads once the node's `before` has run. */
export interface AnalyticsNode {
  t: TestNode;
  acme: Org;
  globex: Org;
  readonly db: () => Knex;
}

/** Starts the node and its orgs before the enclosing describe's tests, and closes it after. */
function analyticsNode(set: EngineSet): AnalyticsNode {
  const node = { db: () => node.t.node.deps.db } as AnalyticsNode;
  before(async () => {
    node.t = await startTestNode({ engines: set, config: { kAnonymityFloor: FLOOR } });
    node.acme = await provisionOrg(node.t, 'Acme');
    node.globex = await provisionOrg(node.t, 'Globex');
  });
  after(() => node.t?.close());
  return node;
}

/** The analytics routes suite on every engine set the machine has, each run with a node of its own. */
export function describeAnalytics(body: (node: AnalyticsNode) => void): void {
  for (const { set, skip } of engineSets) describe(`analytics routes (${set} engines)`, function () {
    if (skip) return;
    this.timeout(120_000);
    body(analyticsNode(set));
  });
}
