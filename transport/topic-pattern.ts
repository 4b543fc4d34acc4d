import { TroupeError } from '../ops/kernel/errors.js';

/**
 * AMQP topic semantics, shared by the in-process transport and by the AMQP transport's local dispatch (the broker
 * delivers one copy per node even when several of its patterns match, so the node must match again itself).
 * As in RabbitMQ's topic exchange: keys split on `.`, `*` matches exactly one word, `#` zero or more words,
 * words may be empty (`a..b`), and the empty key has no words at all.
 */

/** AMQP short strings cap routing keys and binding keys at 255 bytes; the broker refuses longer ones. */
export const MAX_TOPIC_BYTES = 255;

function words(key: string): string[] {
  return key === '' ? [] : key.split('.');
}

export function matchesTopic(pattern: string, topic: string): boolean {
  return matchWords(words(pattern), words(topic));
}

/** Whether a topic matches one pattern, for a subscription that is asked of every event published. */
export type TopicMatcher = (topic: string) => boolean;

/**
 * `matchesTopic` with the pattern split once. A pattern without wildcards (most subscriptions name one org's or one
 * worker's topic) matches exactly its own key: a string comparison, where splitting both for every event published
 * cost the session path about 2 % of its CPU (issue 19).
 */
export function topicMatcher(pattern: string): TopicMatcher {
  if (!pattern.includes('*') && !pattern.includes('#')) return (topic) => topic === pattern;
  const p = words(pattern);
  return (topic) => matchWords(p, words(topic));
}

function matchWords(p: readonly string[], t: readonly string[]): boolean {
  // memo[i][j]: does p[i..] match t[j..]? Memoising keeps hostile patterns (many `#`) polynomial, not exponential;
  // recursion depth is bounded by the 255-byte key limit (at most 128 words each).
  const memo: (boolean | undefined)[][] = Array.from({ length: p.length + 1 }, () => []);
  const match = (i: number, j: number): boolean => {
    const known = memo[i]![j];
    if (known !== undefined) return known;
    let result: boolean;
    if (i === p.length) result = j === t.length;
    else if (p[i] === '#') result = match(i + 1, j) || (j < t.length && match(i, j + 1));
    else result = j < t.length && (p[i] === '*' || p[i] === t[j]) && match(i + 1, j + 1);
    memo[i]![j] = result;
    return result;
  };
  return match(0, 0);
}

/** A topic events are published on: a concrete routing key, no wildcards. */
export function assertTopic(topic: string): void {
  if (typeof topic !== 'string' || topic.length === 0) throw new TroupeError('VALIDATION_FAILED', 'event topic must be a non-empty string');
  if (Buffer.byteLength(topic) > MAX_TOPIC_BYTES) throw new TroupeError('VALIDATION_FAILED', `event topic exceeds ${MAX_TOPIC_BYTES} bytes`);
  if (words(topic).some((w) => w === '*' || w === '#')) throw new TroupeError('VALIDATION_FAILED', 'event topic must not contain wildcards');
}

export function assertPattern(pattern: string): void {
  if (typeof pattern !== 'string') throw new TroupeError('VALIDATION_FAILED', 'subscription pattern must be a string');
  if (Buffer.byteLength(pattern) > MAX_TOPIC_BYTES) throw new TroupeError('VALIDATION_FAILED', `subscription pattern exceeds ${MAX_TOPIC_BYTES} bytes`);
}
