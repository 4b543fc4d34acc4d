/**
 * Invariant: topic patterns match exactly as RabbitMQ's topic exchange does (`*` one word, `#` zero or more,
 * words split on `.`, empty words allowed), so the local transport and the AMQP node-side dispatch agree with
 * the broker; and hostile patterns stay cheap to match.
 */
import { expect } from 'chai';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { assertPattern, assertTopic, matchesTopic, topicMatcher } from '../../../transport/topic-pattern.js';

// [pattern, topic, matches] — cases from the AMQP 0-9-1 topic exchange semantics and RabbitMQ's topic tests.
const cases: Array<[string, string, boolean]> = [
  ['a.b.c', 'a.b.c', true],
  ['a.b.c', 'a.b', false],
  ['a.*.c', 'a.b.c', true],
  ['a.*.c', 'a.c', false],
  ['a.*.c', 'a.b.b.c', false],
  ['*', 'a', true],
  ['*', '', false],
  ['*', 'a.b', false],
  ['#', '', true],
  ['#', 'a', true],
  ['#', 'a.b.c', true],
  ['a.#', 'a', true],
  ['a.#', 'a.b.c', true],
  ['a.#', 'b.a', false],
  ['#.c', 'c', true],
  ['#.c', 'a.b.c', true],
  ['#.c', 'a.b.c.d', false],
  ['a.#.c', 'a.c', true],
  ['a.#.c', 'a.b.x.c', true],
  ['a.#.c', 'a.b.x.d', false],
  ['#.#', 'a', true],
  ['*.#', '', false],
  ['*.#', 'a', true],
  ['#.*', 'a.b', true],
  ['*.*', 'a', false],
  ['a..b', 'a..b', true],
  ['a.*.b', 'a..b', true],
  ['org.*.session.#', 'org.o1.session', true],
  ['org.*.session.#', 'org.o1.session.updated', true],
  ['org.*.session.#', 'org.o1.o2.session.updated', false],
  ['a*.b', 'ax.b', false],
  ['a*.b', 'a*.b', true],
  ['session.changed.o1', 'session.changed.o1', true],
  ['session.changed.o1', 'session.changed.o12', false],
  ['session.changed.o1', 'session.changed', false],
  ['', '', true],
  ['', 'a', false],
];

describe('topic pattern matching', () => {
  for (const [pattern, topic, expected] of cases) {
    it(`${JSON.stringify(pattern)} ${expected ? 'matches' : 'does not match'} ${JSON.stringify(topic)}`, () => {
      expect(matchesTopic(pattern, topic)).to.equal(expected);
      expect(topicMatcher(pattern)(topic), 'a compiled subscription').to.equal(expected);
    });
  }

  it('matches a pattern of many # against a long non-matching topic quickly', () => {
    const pattern = Array.from({ length: 127 }, () => '#').join('.') + '.z';
    const topic = Array.from({ length: 127 }, () => 'a').join('.');
    const startedAt = performance.now();
    expect(matchesTopic(pattern, topic)).to.equal(false);
    expect(performance.now() - startedAt).to.be.below(500);
  });

  it('refuses publish topics that are empty, too long or contain wildcards', () => {
    for (const topic of ['', 'a.*', '#', 'x'.repeat(256)]) {
      expect(() => assertTopic(topic), topic).to.throw(TroupeError).with.property('code', 'VALIDATION_FAILED');
    }
    expect(() => assertTopic('org.o1.session.updated')).not.to.throw();
    expect(() => assertPattern('é'.repeat(128))).to.throw(TroupeError);
  });
});
