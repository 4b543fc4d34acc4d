/**
 * Invariant: placement is deterministic and moves little. Every node computes the same primary and backup per
 * shard from the same membership; N nodes get about S/N shards each; removing a node promotes exactly its
 * shards' backups and moves nothing else; and a node lets go of a shard it holds only once that shard's primary
 * is consuming it, so a handover never leaves a shard to nobody.
 */
import { expect } from 'chai';
import { planShards } from '../../transport/cluster/balancer.js';
import { rankNodes, shardRoles } from '../../transport/cluster/rendezvous.js';
import { parseHeartbeat, type Member } from '../../transport/cluster/presence.js';

const S = 64;
const member = (nodeId: string, consuming: number[] = [], owned: number[] = []): Member => ({
  nodeId, url: undefined, consuming, owned, lastSeenAt: Date.now(), self: false,
});

describe('cluster placement', () => {
  it('ranks nodes the same whatever order membership is listed in', () => {
    for (let shard = 0; shard < S; shard += 1) {
      expect(rankNodes(shard, ['a', 'b', 'c'])).to.deep.equal(rankNodes(shard, ['c', 'a', 'b']));
    }
  });

  it('gives each of N nodes about S/N shards as primary', () => {
    const nodes = ['node-a', 'node-b', 'node-c', 'node-d'];
    const roles = shardRoles(S, nodes);
    for (const node of nodes) {
      const held = roles.filter((r) => r.primary === node).length;
      expect(held, node).to.be.within(S / nodes.length - 8, S / nodes.length + 8);
    }
    expect(roles.every((r) => r.primary !== r.backup)).to.equal(true);
  });

  it('promotes the backup when a primary leaves, and moves no other shard', () => {
    const before = shardRoles(S, ['a', 'b', 'c']);
    const after = shardRoles(S, ['a', 'b']);
    before.forEach((role, shard) => {
      if (role.primary === 'c') expect(after[shard]!.primary, `shard ${shard}`).to.equal(role.backup);
      else expect(after[shard]!.primary, `shard ${shard}`).to.equal(role.primary);
    });
  });

  it('consumes its primary and backup shards and leaves standby subscriptions on the others', () => {
    const all = Array.from({ length: S }, (_, s) => s);
    const roles = shardRoles(S, ['a', 'b', 'c']);
    const actions = planShards('a', S, [member('a'), member('b'), member('c')], { consuming: all, active: [], proven: [] });
    const released = new Set(actions.filter((a) => a.kind === 'release').map((a) => a.shard));
    roles.forEach((role, shard) => expect(released.has(shard), `shard ${shard}`).to.equal(role.primary !== 'a' && role.backup !== 'a'));
  });

  it('keeps a shard it holds until the shard primary consumes it, then hands it over', () => {
    const roles = shardRoles(S, ['a', 'b']);
    const shard = roles.findIndex((r) => r.primary === 'b');
    const status = { consuming: [shard], active: [shard], proven: [] };
    const forShard = (members: Member[]) => planShards('a', S, members, status).filter((a) => a.shard === shard);
    expect(forShard([member('a'), member('b')])).to.deep.equal([]);
    expect(forShard([member('a'), member('b', [shard])])).to.deep.equal([{ kind: 'handover', shard }]);
  });

  it('holds everything alone', () => {
    const actions = planShards('a', S, [member('a')], { consuming: [], active: [], proven: [] });
    expect(actions).to.have.length(S);
    expect(actions.every((a) => a.kind === 'consume')).to.equal(true);
  });

  it('ignores heartbeats that are not exactly what a node sends', () => {
    const ok = { v: 1, nodeId: 'n1', leaving: false, url: 'http://x', consuming: [3, 1], owned: [1], inbox: 'troupe.inbox.n1.0a1b2c3d' };
    expect(parseHeartbeat(Buffer.from(JSON.stringify(ok)))?.consuming).to.deep.equal([1, 3]);
    expect(parseHeartbeat(Buffer.from(JSON.stringify(ok)))?.inbox).to.equal(ok.inbox);
    const { inbox: _, ...withoutInbox } = ok;
    expect(parseHeartbeat(Buffer.from(JSON.stringify(withoutInbox)))?.inbox).to.equal(undefined);
    for (const bad of [
      'not json', '[]', JSON.stringify({ ...ok, v: 2 }), JSON.stringify({ ...ok, nodeId: '../x' }),
      JSON.stringify({ ...ok, consuming: [-1] }), JSON.stringify({ ...ok, owned: ['1'] }),
      JSON.stringify({ ...ok, consuming: Array.from({ length: 5000 }, () => 1) }),
      JSON.stringify({ ...ok, inbox: 7 }), JSON.stringify({ ...ok, inbox: 'x'.repeat(256) }),
    ]) {
      expect(parseHeartbeat(Buffer.from(bad)), bad.slice(0, 40)).to.equal(undefined);
    }
  });
});
