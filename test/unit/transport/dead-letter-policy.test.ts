/**
 * Invariant: the dead-letter policies (decision 0048) match exactly one deployment's shard queues and its dead-letter
 * queue, whatever its prefix holds (dots, regex characters), and say what at-least-once dead-lettering needs; the
 * rabbitmqctl lines logged for an operator without the management API carry the same pattern and definition.
 */
import { expect } from 'chai';
import { deadLetterPolicies, policyCommands } from '../../../transport/amqp/dead-letter-policy.js';
import { topologyNames } from '../../../transport/amqp/topology.js';

describe('dead-letter policies', () => {
  for (const prefix of ['troupe', 'acme.prod', 'a+b(c)']) {
    it(`match only the queues of prefix ${prefix}`, () => {
      const [shards, bound] = deadLetterPolicies(prefix, topologyNames(prefix, 'n'), 4, 10_000);
      const shardPattern = new RegExp(shards!.pattern);
      expect([`${prefix}.shard.0`, `${prefix}.shard.63`].every((q) => shardPattern.test(q))).to.equal(true);
      for (const other of [`${prefix}.shard.1x`, `x${prefix}.shard.1`, `${prefix}.dead-letter`, `${prefix}.events.n`, `${prefix}Xshard.1`]) {
        expect(shardPattern.test(other), other).to.equal(false);
      }
      const boundPattern = new RegExp(bound!.pattern);
      expect(boundPattern.test(`${prefix}.dead-letter`)).to.equal(true);
      expect(boundPattern.test(`${prefix}.dead-letters`)).to.equal(false);
      expect(shards!.definition).to.deep.equal({ 'dead-letter-strategy': 'at-least-once', overflow: 'reject-publish', 'delivery-limit': 4 });
      expect(bound!.definition).to.deep.equal({ 'max-length': 10_000, overflow: 'reject-publish' });
    });
  }

  it('prints the rabbitmqctl lines the README gives for the default prefix', () => {
    expect(policyCommands('/', deadLetterPolicies('troupe', topologyNames('troupe', 'n'), 4, 10_000))).to.deep.equal([
      `rabbitmqctl set_policy -p '/' --apply-to queues --priority 10 'troupe.shard-dead-lettering' '^troupe\\.shard\\.[0-9]+$' '{"dead-letter-strategy":"at-least-once","overflow":"reject-publish","delivery-limit":4}'`,
      `rabbitmqctl set_policy -p '/' --apply-to queues --priority 10 'troupe.dead-letter-bound' '^troupe\\.dead-letter$' '{"max-length":10000,"overflow":"reject-publish"}'`,
    ]);
  });
});
