// Invariant (decision 0055): on both engine sets, a session's status transition writes its snapshot and every read
// model in one statement with no BEGIN or COMMIT of its own when nothing else commits, and a dispatch that made its
// tracker id up never reads a snapshot first. Statements are seen where the node's pool hands out connections, so
// builder queries and plain SQL alike are counted.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { watchStatements } from '../../support/statement-watch.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from './support.js';
import { sessionKeyOf } from '../../support/session-keys.js';

for (const { set, skip } of engineSets) describe(`session statements (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: Org;
  let daemon: Daemon;
  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t, 'Acme');
    daemon = await registerDaemon(t, org);
  });
  after(() => t?.close());

  /** The statements on the node's pooled connections while `work` runs (background work included), with their connection. */
  async function statementsOf(work: () => Promise<unknown>): Promise<Array<{ on: number; text: string }>> {
    const seen: Array<{ on: number; text: string }> = [];
    await watchStatements(t.node.deps.db, ({ text, connection }) => seen.push({ on: connection, text: text.replace(/\s+/g, ' ').trim() }), work);
    return seen;
  }

  const onSnapshots = <T extends { text: string }>(statements: T[]) => statements.filter((s) => s.text.includes('actor_snapshots'));
  const listed = (statements: Array<{ text: string }>) => statements.map((s) => s.text).join('\n');

  it('a dispatch writes its new session in one statement without reading a snapshot first', async () => {
    const statements = await statementsOf(() => dispatch(t, org));
    const snapshots = onSnapshots(statements);
    expect(snapshots, listed(statements)).to.have.length(1);
    expect(snapshots[0]!.text).to.match(/^with snapshot as \(insert into actor_snapshots/);
  });

  it('each status transition, terminal effects included, is one statement with no transaction of its own', async () => {
    const sessionId = await dispatch(t, org);
    for (const status of ['claimed', 'running', 'finalizing', 'completed']) {
      let answered = 0;
      const statements = await statementsOf(async () => { answered = (await report(t, daemon, sessionId, status, { costUsd: 0.5 })).status; });
      expect(answered, status).to.equal(200);
      const snapshots = onSnapshots(statements);
      expect(snapshots, `${status}:\n${listed(statements)}`).to.have.length(1);
      expect(snapshots[0]!.text).to.match(/^with snapshot as \(update actor_snapshots/);
      // Background work (a liveness batch) may run a transaction meanwhile, but not on the transition's connection
      // around its statement: no BEGIN before it there, no COMMIT after it.
      const mine = statements.filter((s) => s.on === snapshots[0]!.on).map((s) => s.text);
      const at = mine.indexOf(snapshots[0]!.text);
      expect(mine[at - 1] ?? '', `${status}:\n${listed(statements)}`).to.not.match(/^begin/i);
      expect(mine[at + 1] ?? '', `${status}:\n${listed(statements)}`).to.not.match(/^commit/i);
    }
    // Effects are keyed by the session's key inside the node, not by the public id two orgs may share.
    const key = await sessionKeyOf(t.node.deps.db, org.orgId, sessionId);
    const effects = await t.node.deps.db('session_effect_ledger').where({ key: `${key}:1:terminal` });
    expect(effects).to.have.length(1);
  });
});
